"""How often `langid` labels a short English caption wrongly, by caption length.

The captions are short English alt texts of the kinds image datasets hold (one to ten
words, written for this measurement). Each is labelled by the `langid` stage's model as an
ordinary text (no length fallback), alone and joined in pairs ("A and b") for longer
lengths; the table gives, per length in characters, how many are labelled other than `en`
and the mean language_score of right and wrong labels. The stage's caption fallback
(`min_chars`, 25 by default for captions) comes from this table.

    python bench/images/langid_captions.py          # prints the table, writes the JSON
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent.parent / "src"))

from mixplane.stages.langid.stage import LanguageId  # noqa: E402

BINS = ((0, 10), (10, 15), (15, 20), (20, 25), (25, 30), (30, 40), (40, 60), (60, 200))
CAPTIONS = """
Sunset over the lake
Red car parked on the street
Portrait of a young woman smiling
Logo
Company logo on white background
A dog in the snow
Mountains at dawn
Close-up of a sunflower
Man riding a bicycle in the city
Kids playing football in the park
Fresh bread on a wooden table
Aerial view of the coastline
Old stone bridge over a river
Night sky full of stars
Cat sleeping on a sofa
Bowl of ramen
Vintage poster
Wedding photo
Coffee cup
Blue sky with clouds
Green hills and a farmhouse
Snow covered pine trees
Birthday cake with candles
City skyline at night
Beach with palm trees
Woman reading a book
Hands holding a smartphone
Laptop on a desk
Glass of red wine
Autumn leaves on the ground
Black and white photo of a street
Map of Europe
Diagram of the heart
Screenshot of the settings page
Icon set
Pattern background
Abstract art
Watercolor painting of flowers
Pencil sketch of a horse
Family at the dinner table
Students in a classroom
Doctor talking to a patient
Chef cooking in a kitchen
Train station platform
Airplane taking off
Boat on calm water
Lighthouse on a cliff
Waterfall in the forest
Desert road
Rainy window
Yellow taxi
Bride and groom
Baby sleeping
Puppy
Kitten playing with yarn
Horse in a field
Cows grazing
Fish market
Street food stall
Pizza with mushrooms
Salad bowl
Chocolate cake
Strawberries
Apple pie
Tea time
Breakfast in bed
Runner on a track
Basketball game
Soccer stadium
Tennis player serving
Swimming pool
Ski slope
Hiking trail
Camping tent at night
Campfire
Fireworks over the harbour
Christmas tree
Halloween pumpkins
Easter eggs
Flowers in a vase
Rose garden
Tulip field in spring
Cherry blossoms
Wooden house in the woods
Modern kitchen interior
Living room with a fireplace
Bedroom with white walls
Office building
Construction site
Bridge at sunset
Castle on a hill
Church tower
Temple in the mountains
Ancient ruins
Museum hall
Art gallery
Concert crowd
Guitar player on stage
Piano keys
Old books on a shelf
Handwritten letter
Newspaper
Calendar page
Wall clock
Alarm clock
Keyboard and mouse
Headphones
Camera lens
Drone in flight
Electric car charging
Bicycle lane
Bus stop
Traffic jam
Parking lot
Gas station
Farmers market
Grocery store shelves
Shopping bags
Sale sign
Price tag
Credit card
Coins and banknotes
Business meeting
Handshake
Team photo
Group of friends
Elderly couple walking
Child drawing with crayons
Teacher at the blackboard
Science lab
Microscope
Test tubes
Solar panels on a roof
Wind turbines
Power lines
Factory chimney
River delta from above
Volcano
Glacier
Iceberg
Northern lights
Full moon
Milky way
Rainbow over the field
Storm clouds
Fog in the valley
Frozen lake
Tropical island
Coral reef
Sea turtle
Dolphins jumping
Whale tail
Eagle in flight
Owl on a branch
Parrot
Butterfly on a flower
Bee on lavender
Spider web with dew
Snail
Frog on a leaf
Lion resting
Elephant family
Giraffe eating leaves
Zebra herd
Monkey in a tree
Panda eating bamboo
Polar bear
Penguins on the ice
"""


def measure() -> dict:
    stage = LanguageId(min_chars=0)
    stage.setup()
    captions = [line for line in CAPTIONS.splitlines() if line]
    halves = captions[: len(captions) // 2 * 2]
    pairs = [
        f"{a} and {b[0].lower()}{b[1:]}" for a, b in zip(halves[::2], halves[1::2], strict=True)
    ]
    rows = []
    wrong_as: Counter = Counter()
    for caption in captions + pairs:
        language, score = stage.detect(caption)
        rows.append((len(caption), language == "en", score))
        if language != "en":
            wrong_as[language] += 1
    table = []
    for low, high in BINS:
        chosen = [r for r in rows if low <= r[0] < high]
        if not chosen:
            continue
        right = [s for _, ok, s in chosen if ok]
        wrong = [s for _, ok, s in chosen if not ok]
        table.append(
            {
                "chars": f"{low}-{high - 1}",
                "captions": len(chosen),
                "wrong": round(len(wrong) / len(chosen), 3),
                "score_right": round(sum(right) / len(right), 2) if right else None,
                "score_wrong": round(sum(wrong) / len(wrong), 2) if wrong else None,
            }
        )
    return {"captions": len(rows), "table": table, "labelled_as": dict(wrong_as.most_common())}


def main() -> None:
    result = measure()
    print("| characters | captions | labelled other than en | mean score right | wrong |")
    print("| --- | --- | --- | --- | --- |")
    for row in result["table"]:
        print(
            f"| {row['chars']} | {row['captions']} | {row['wrong']:.0%} | "
            f"{row['score_right']} | {row['score_wrong']} |"
        )
    print("labelled as:", result["labelled_as"])
    out = BENCH.parent / "results" / "langid-captions.json"
    out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
