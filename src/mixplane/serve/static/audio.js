// Players of audio-text documents' clips. Without a service token the <audio> element asks
// the service itself: nothing is read before play (preload none) and seeking sends Range
// requests. With a token the element cannot send it (and its controls stay disabled without
// a source), so a button fetches the clip with the token when asked and puts the player in
// its place, playing from a blob: URL that is freed when its list is redrawn.

import { apiBlob, token } from "./api.js";
import { h } from "./dom.js";
import { fmtBytes, fmtInt, fmtNum } from "./format.js";

/** What a clip's properties say of it: "1.75 s · 16,000 Hz" (a part it lacks left out). */
export function clipFacts(properties) {
  const { duration, sample_rate: rate } = properties || {};
  return [
    typeof duration === "number" ? `${fmtNum(duration, 2)} s` : null,
    typeof rate === "number" ? `${fmtInt(rate)} Hz` : null,
  ].filter(Boolean).join(" · ");
}

export function clips() {
  let urls = [];

  function audioElement(path, label) {
    const audio = h("audio", {
      class: "clip",
      controls: true,
      preload: "none",
      "aria-label": label,
      "data-audio": path,
      // The controls are not the list item's: a click on them does not open the document.
      onclick: (event) => event.stopPropagation(),
      onkeydown: (event) => event.stopPropagation(),
    });
    audio.addEventListener("loadedmetadata",
      () => audio.setAttribute("data-loaded", "true"), { once: true });
    return audio;
  }

  /** A button that fetches the clip with the token, then plays it in an <audio> element. */
  function fetchButton(path, label, bytes) {
    const size = typeof bytes === "number" ? ` (${fmtBytes(bytes)})` : "";
    const button = h("button", {
      type: "button",
      class: "secondary clip-fetch",
      "data-audio": path,
      title: `Fetch and play ${label}`,
      onkeydown: (event) => event.stopPropagation(),
    }, `▶ Play${size}`);
    button.addEventListener("click", (event) => {
      event.stopPropagation();
      button.disabled = true;
      apiBlob(path)
        .then((blob) => {
          const url = URL.createObjectURL(blob);
          urls.push(url);
          const audio = audioElement(path, label);
          audio.src = url;
          button.replaceWith(audio);
          // A browser may refuse to start it on its own (no recent click): its controls can.
          audio.play().catch(() => {});
        })
        .catch((failure) => {
          button.replaceWith(h("span", { class: "clip missing", title: failure.message },
            "no clip"));
        });
    });
    return button;
  }

  return {
    /** An <audio controls> of the clip at `path` (as the API names it) of `bytes` bytes; with
     *  a token, a button that makes one. */
    player(path, label, bytes) {
      if (token()) return fetchButton(path, label, bytes);
      const audio = audioElement(path, label);
      audio.src = path;
      return audio;
    },
    /** Free the clips fetched so far (call before redrawing the list that shows them). */
    clear() {
      for (const url of urls) URL.revokeObjectURL(url);
      urls = [];
    },
  };
}
