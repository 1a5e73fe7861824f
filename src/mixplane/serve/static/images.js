// Thumbnails of image-text documents. They are fetched with the service token (an <img src>
// cannot carry it) and shown from blob: URLs, which are freed when their list is redrawn.

import { apiBlob } from "./api.js";
import { h } from "./dom.js";

export function thumbnails() {
  let urls = [];
  return {
    /** An <img> of the thumbnail at `path` (as the API names it), at most `size` pixels. */
    image(path, size, alt) {
      const img = h("img", { class: "thumb", alt, "data-thumbnail": path });
      apiBlob(path, { size })
        .then((blob) => {
          const url = URL.createObjectURL(blob);
          urls.push(url);
          img.addEventListener("load", () => img.setAttribute("data-loaded", "true"), {
            once: true,
          });
          img.src = url;
        })
        .catch((failure) => {
          img.replaceWith(h("span", { class: "thumb missing", title: failure.message },
            "no preview"));
        });
      return img;
    },
    /** Free the images made so far (call before redrawing the list that shows them). */
    clear() {
      for (const url of urls) URL.revokeObjectURL(url);
      urls = [];
    },
  };
}
