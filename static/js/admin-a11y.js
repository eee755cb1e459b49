/* CortexWeb's admin: accessible names Django's own admin leaves out (found by axe-core in
   tests/browser/test_admin_pages.py). Loaded by templates/admin/base_site.html; no inline script (CSP). */
(function () {
  "use strict";

  // A form control with no label of its own: a tabular inline's cells (named by their column's
  // header) and the split date/time inputs (named by their row's label).
  function nameControls() {
    document.querySelectorAll("input:not([type=hidden]), select, textarea").forEach(function (control) {
      if (control.labels && control.labels.length) return;
      if (control.getAttribute("aria-label") || control.getAttribute("aria-labelledby")) return;
      var name = "";
      var cell = control.closest("td");
      var table = control.closest("table");
      if (cell && table && table.tHead) {
        var header = table.tHead.rows[0] && table.tHead.rows[0].cells[cell.cellIndex];
        var row = control.closest("tr");
        var original = row && row.querySelector("td.original p");
        name = (header ? header.textContent.trim() : "") + (original && original.textContent.trim() ? " of " + original.textContent.trim() : "");
      }
      if (!name) {
        var formRow = control.closest(".form-row");
        var label = formRow && formRow.querySelector("label");
        if (label) name = label.textContent.replace(/:$/, "").trim() + (control.id.match(/_1$/) ? " (time)" : control.id.match(/_0$/) ? " (date)" : "");
      }
      if (name) control.setAttribute("aria-label", name);
    });
  }

  // SelectFilter2 gives a <span> an aria-label, which ARIA allows only on an element with a role.
  function roleTooltips() {
    document.querySelectorAll("span.help-tooltip[aria-label]:not([role])").forEach(function (span) {
      span.setAttribute("role", "img");
    });
  }

  // A tabular inline wider than the form scrolls in its own box: reachable by keyboard.
  function focusableScrollers() {
    document.querySelectorAll(".inline-group .tabular fieldset.module").forEach(function (box) {
      if (box.scrollWidth > box.clientWidth && !box.hasAttribute("tabindex")) box.setAttribute("tabindex", "0");
    });
  }

  function run() {
    nameControls();
    roleTooltips();
    focusableScrollers();
  }
  // After Django's own widgets (SelectFilter2, DateTimeShortcuts) built themselves on "load".
  window.addEventListener("load", function () { window.setTimeout(run, 0); });
  window.addEventListener("resize", focusableScrollers);
})();
