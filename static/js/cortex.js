// Behaviour of the HTMX pages. Pages carry no inline script (the Content-Security-Policy forbids it),
// and htmx's own evaluation of strings is off (htmx-config in base.html): what needs code lives here.

// The event log refreshes every 2 s, except while a row's details are open, so they stay readable.
document.addEventListener("htmx:beforeRequest", (event) => {
  const element = event.detail.elt;
  if (element.id === "events" && element.querySelector("details[open]")) {
    event.preventDefault();
  }
});

// The ontology index's filter (#ontology-filter): as one types, the tree keeps the classes whose name or
// term id contains the text and the branches that lead to them, and unfolds the domains that have one.
// Sent as a form (without script), the server filters the same way (apps/ontology/browse.py).
document.addEventListener("input", (event) => {
  const input = event.target;
  const tree = document.getElementById("ontology-tree");
  if (input.id !== "ontology-filter" || !tree) {
    return;
  }
  const text = input.value.trim().toLowerCase();
  const matches = new Set(); // a class under two parents counts once
  for (const domain of tree.querySelectorAll("details.ontology-domain")) {
    let found = 0;
    // Deepest first, so each class knows whether one of its subclasses stays.
    for (const item of Array.from(domain.querySelectorAll("li[data-terms]")).reverse()) {
      const itself = text !== "" && item.dataset.terms.includes(text);
      const below = item.querySelector(":scope > ul > li:not([hidden])") !== null;
      item.hidden = text !== "" && !itself && !below;
      if (itself) {
        found += 1;
        matches.add(item.querySelector(":scope > a").getAttribute("href"));
      }
    }
    domain.hidden = text !== "" && found === 0;
    domain.open = text === "" ? domain.dataset.initiallyOpen === "true" : found > 0;
  }
  const count = document.getElementById("ontology-filter-count");
  if (count) {
    const found = matches.size === 1 ? "1 class matches" : `${matches.size} classes match`;
    count.textContent = text === "" ? count.dataset.all : `${found} “${input.value.trim()}”.`;
  }
});
