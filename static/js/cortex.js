// Behaviour of the HTMX pages. Pages carry no inline script (the Content-Security-Policy forbids it),
// and htmx's own evaluation of strings is off (htmx-config in base.html): what needs code lives here.

// The event log refreshes every 2 s, except while a row's details are open, so they stay readable.
document.addEventListener("htmx:beforeRequest", (event) => {
  const element = event.detail.elt;
  if (element.id === "events" && element.querySelector("details[open]")) {
    event.preventDefault();
  }
});
