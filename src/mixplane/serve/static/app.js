// The dashboard's entry point: token, tabs, the service line in the header, and the shared
// pieces every view uses (the dataset list, the document viewer).

import { api, hasToken, initToken, onUnauthorized } from "./api.js";
import { compositionView } from "./composition.js";
import { datasetsView } from "./datasets.js";
import { fill, h } from "./dom.js";
import { createDocumentViewer } from "./documents.js";
import { jobsView } from "./jobs.js";
import { runsView } from "./runs.js";
import { searchView } from "./search.js";

const VIEWS = {
  datasets: datasetsView,
  search: searchView,
  composition: compositionView,
  runs: runsView,
  jobs: jobsView,
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
};

// Views are created up front; each loads its data the first time it is shown.
const tabs = document.getElementById("tabs");
const views = {};
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
      onclick: () => showView(name),
    }, section.dataset.title),
  );
}

let current = null;
function showView(name) {
  if (!views[name]) name = "datasets";
  if (current === name) return;
  if (current) {
    views[current].section.hidden = true;
    views[current].controller.hide();
  }
  current = name;
  for (const tab of tabs.children) {
    tab.setAttribute("aria-selected", String(tab.dataset.view === name));
  }
  views[name].section.hidden = false;
  views[name].controller.show();
  // The view is kept in the fragment so a reload (or a shared link) opens the same tab.
  history.replaceState(null, "", `${location.pathname}${location.search}#${name}`);
}

window.addEventListener("hashchange", () => {
  // A token typed into the address bar of an open page changes only the fragment: keep it
  // and start over with it.
  if (initToken()) {
    location.reload();
    return;
  }
  showView(location.hash.slice(1));
});
showView(location.hash.slice(1));

api("health")
  .then((health) => {
    const info = document.getElementById("service-info");
    info.textContent = `${health.catalog} · mixplane ${health.version}`;
    info.title = health.catalog;
  })
  .catch(() => {}); // a 401 shows the banner; other failures show in the views
