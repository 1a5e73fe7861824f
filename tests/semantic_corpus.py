"""Short English documents on unrelated topics, twelve with a paraphrase written by hand (other
words, other order: MinHash on word 5-grams sees little in common) and four with a near copy."""

from __future__ import annotations

ORIGINALS = [
    "The Amazon rainforest produces a large share of the world's oxygen and is home to "
    "millions of insect species. Deforestation there has accelerated over the past decade.",
    "To bake sourdough bread, mix flour, water and salt with an active starter, then let the "
    "dough rise slowly overnight before shaping it.",
    "The central bank raised interest rates by half a percentage point on Wednesday in an "
    "effort to slow inflation.",
    "Regular exercise strengthens the heart, lowers blood pressure and improves sleep quality "
    "in adults of all ages.",
    "The striker scored twice in the second half, giving her team a three to one victory in "
    "the championship final.",
    "Jupiter is the largest planet in the solar system, and its Great Red Spot is a storm "
    "larger than Earth.",
    "Before replacing a light switch, turn off the power at the breaker and confirm with a "
    "voltage tester that the wires are dead.",
    "Honeybees communicate the location of flowers to their hive mates by performing a "
    "waggle dance.",
    "The museum will close for renovations in March and reopen to visitors next spring with "
    "a new wing for modern art.",
    "Drinking enough water during hot weather helps prevent dehydration, headaches and dizziness.",
    "The train to the airport leaves every fifteen minutes from platform four and takes about "
    "half an hour.",
    "Volcanic eruptions can cool the global climate for a year or two because the ash and "
    "sulfur they emit block sunlight.",
    "Medieval castles were built on high ground so that defenders could see approaching "
    "armies from far away.",
    "A good password is long, unique to each site and stored in a password manager rather "
    "than written on paper.",
    "The violinist practiced scales for two hours every morning before rehearsing with the "
    "orchestra.",
    "Coral reefs lose their color when warm water forces the algae living in their tissues "
    "to leave.",
    "The city council approved a plan to add protected bicycle lanes along the main avenue.",
    "Penguins cannot fly, but their wings work as flippers that make them fast swimmers.",
    "Compound interest means that the interest earned each year is added to the principal "
    "and earns interest itself.",
    "The novel follows a young detective investigating a series of thefts in a small coastal town.",
    "Tomatoes grow best in full sun and need deep watering twice a week during the summer.",
    "The company recalled thousands of electric scooters after reports that their batteries "
    "could overheat.",
    "Learning a second language as a child can make it easier to pick up a third one later "
    "in life.",
    "The marathon route passes through five neighborhoods and ends in front of the old city hall.",
    "A solar eclipse happens when the Moon passes between the Sun and Earth and casts a "
    "shadow on our planet.",
    "Vaccines train the immune system to recognize a virus without causing the disease itself.",
    "The ancient Romans built aqueducts that carried fresh water into cities over long distances.",
    "Our hotel room had a balcony overlooking the harbor, and breakfast was served on the terrace.",
    "Earthquakes are measured with seismometers, which record the vibrations of the ground.",
    "The chess champion defended her title after a tense tiebreak of rapid games.",
    "Composting kitchen scraps reduces household waste and produces rich soil for the garden.",
    "The software update fixes a bug that caused the app to crash when uploading photos.",
    "Wolves live in packs led by a breeding pair and hunt large animals such as elk and deer.",
    "The bakery on the corner sells fresh croissants every morning until they run out around ten.",
    "Glaciers carve deep U-shaped valleys as they slowly move down mountains.",
    "The airline canceled dozens of flights because a snowstorm closed the runways.",
    "Shakespeare wrote thirty-seven plays, including tragedies, comedies and histories.",
    "Sleeping fewer than six hours a night over long periods is linked to a higher risk of "
    "heart disease.",
    "The farmers' market moved indoors for the winter and now opens on Saturday mornings.",
    "Octopuses can change the color and texture of their skin to blend in with their surroundings.",
]

#: Paraphrases of ORIGINALS[0..11], in order.
PARAPHRASES = [
    "A big portion of the planet's oxygen comes from the Amazon rainforest, which shelters "
    "millions of kinds of insects. Over the last ten years, the clearing of its forest has "
    "sped up.",
    "Sourdough bread is made by combining an active starter with flour, salt and water and "
    "leaving the dough to rise slowly through the night, after which it is shaped.",
    "On Wednesday, the central bank lifted its interest rates by 0.5 percentage points, "
    "trying to bring inflation down.",
    "Adults of any age who exercise regularly get a stronger heart, lower blood pressure and "
    "better sleep.",
    "In the championship final, her team won three to one after the striker found the net "
    "two times in the second half.",
    "The biggest planet orbiting the Sun is Jupiter; the storm known as its Great Red Spot is "
    "wider than our whole planet.",
    "Switch off the circuit breaker and check with a voltage tester that no current flows in "
    "the wires before you swap out a light switch.",
    "By doing a waggle dance, a honeybee tells the other bees of its colony where the flowers are.",
    "Closing in March for renovation work, the museum plans to welcome visitors again next "
    "spring, when a new modern art wing opens.",
    "In hot weather, staying well hydrated by drinking plenty of water keeps dehydration, "
    "dizziness and headaches away.",
    "Trains for the airport depart from platform four every quarter of an hour, and the trip "
    "lasts roughly thirty minutes.",
    "Because the sulfur and ash thrown out by a volcano block the sun's light, a big eruption "
    "may lower global temperatures for one or two years.",
]

#: Near copies of ORIGINALS[12..15], in order.
NEAR_COPIES = [
    "Medieval castles were usually built on high ground so that defenders could see "
    "approaching armies from far away.",
    "A good password is long, unique to every site and stored in a password manager rather "
    "than written on paper.",
    "the violinist practiced scales for two hours every morning, before rehearsing with the "
    "orchestra",
    "Coral reefs lose their colour when warm water forces the algae living in their tissues "
    "to leave.",
]


def records() -> list[dict]:
    """Originals `o00`..`o39`, paraphrases `p00`..`p11` of `o00`..`o11` and near copies
    `n12`..`n15` of `o12`..`o15`."""
    docs = [{"id": f"o{i:02d}", "text": text} for i, text in enumerate(ORIGINALS)]
    docs += [{"id": f"p{i:02d}", "text": text} for i, text in enumerate(PARAPHRASES)]
    docs += [{"id": f"n{i + 12:02d}", "text": text} for i, text in enumerate(NEAR_COPIES)]
    return docs


def pairs() -> dict[str, str]:
    """Each planted copy's original."""
    found = {f"p{i:02d}": f"o{i:02d}" for i in range(len(PARAPHRASES))}
    found.update({f"n{i:02d}": f"o{i:02d}" for i in range(12, 12 + len(NEAR_COPIES))})
    return found
