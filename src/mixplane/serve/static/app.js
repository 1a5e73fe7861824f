// The dashboard's entry point: token, tabs, the service line in the header, the address (the
// open view and its choices live in the URL fragment, so a link reopens them), and the shared
// pieces every view uses (the dataset list, the document viewer).

import { api, hasToken, initToken, onUnauthorized } from "./api.js";
import { compositionView } from "./composition.js";
import { datasetsView } from "./datasets.js";
import { fill, h } from "./dom.js";
import { createDocumentViewer } from "./documents.js";
import { jobsView } from "./jobs.js";
import { runsView } from "./runs.js";
import { searchView } from "./search.js";
import { stepsView } from "./steps.js";
import { parseFragment, writeFragment } from "./state.js";

const VIEWS = {
  datasets: datasetsView,
  search: searchView,
  composition: compositionView,
  runs: runsView,
  jobs: jobsView,
  steps: stepsView,
};

initToken();

const banner = document.getElementById("banner");
onUnauthorized(() => {
  fill(banner,
    h("strong", {}, "This service needs a token. "),
    hasToken() ? "The token this tab holds was refused. " : "",
    "Open the page as ",
    h("code", {}, `${location.origin}/#token=TOKEN`),
    " with the token the service was started with (--token or MIXPLANE_SERVE_TOKEN).",
  );
  banner.hidden = false;
});

// The dataset list is shared by several views; it is fetched once unless a view asks anew.
let datasetsRequest = null;
const viewer = createDocumentViewer(document.getElementById("document-viewer"));
let current = null;
const views = {};
const context = {
  datasets(refresh = false) {
    if (!datasetsRequest || refresh) {
      datasetsRequest = api("datasets");
      datasetsRequest.catch(() => {
        datasetsRequest = null; // a failed request is retried by the next caller
      });
    }
    return datasetsRequest;
  },
  openDocument: (dataset, shard, index) => viewer.open(dataset, shard, index),
  /** A view's choices changed: the address follows (only the open view's are kept). */
  changed() {
    if (current) writeFragment(current, views[current].controller.params());
  },
};

// Views are created up front; each loads its data the first time it is shown.
const tabs = document.getElementById("tabs");
for (const [name, create] of Object.entries(VIEWS)) {
  const section = document.getElementById(`view-${name}`);
  views[name] = { section, controller: create(section, context) };
  tabs.append(
    h("button", {
      type: "button",
      role: "tab",
      id: `tab-${name}`,
      "data-view": name,
      "aria-controls": section.id,
      onclick: () => showView(name, null),
    }, section.dataset.title),
  );
}

/** Show a view; `params` (from the address) set its choices, null (a tab clicked) keeps the
 *  ones it has, and the address then says them. */
function showView(name, params) {
  if (!views[name]) name = "datasets";
  if (current !== name) {
    if (current) {
      views[current].section.hidden = true;
      views[current].controller.hide();
    }
    current = name;
    for (const tab of tabs.children) {
      tab.setAttribute("aria-selected", String(tab.dataset.view === name));
    }
    views[name].section.hidden = false;
  }
  views[name].controller.show(params);
  // Choices from the address stay in it until the view has applied them (it says when).
  if (params === null) context.changed();
}

window.addEventListener("hashchange", () => {
  // A token typed into the address bar of an open page changes only the fragment: keep it
  // and start over with it.
  if (initToken()) {
    location.reload();
    return;
  }
  viewer.close(); // a new address is a new place: the open document was on the last one
  const { view, params } = parseFragment(location.hash);
  showView(view, params);
});
const opened = parseFragment(location.hash);
showView(opened.view, opened.params);

api("health")
  .then((health) => {
    const info = document.getElementById("service-info");
    info.textContent = `${health.catalog} · mixplane ${health.version}`;
    info.title = health.catalog;
  })
  .catch(() => {}); // a 401 shows the banner; other failures show in the views
