/// The web view's files, shipped inside the binary: no build step, nothing from a CDN.
enum WebAssets {
    /// The page's style sheet.
    static let style = #"""
:root { color-scheme: light; font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
body { margin: 0 auto; max-width: 760px; padding: 0 16px 40px; color: #222; background: #fafafa; }
header { display: flex; align-items: center; gap: 16px; padding: 12px 0; border-bottom: 1px solid #ddd; }
header nav { display: flex; gap: 14px; flex: 1; }
header nav a { color: #2a6fdb; text-decoration: none; font-weight: 600; }
#who { color: #666; font-size: 13px; }
h1 { font-size: 22px; margin: 18px 0 10px; }
h2 { font-size: 15px; margin: 16px 0 6px; color: #555; text-transform: uppercase; letter-spacing: .04em; }
#banner { background: #fdecea; color: #8a1c12; border: 1px solid #f5c2bd; padding: 8px 12px; border-radius: 6px; margin-top: 12px; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
table.docs { width: 100%; border-collapse: collapse; background: #fff; border: 1px solid #ddd; border-radius: 6px; }
table.docs th, table.docs td { text-align: left; padding: 8px 10px; border-bottom: 1px solid #eee; font-size: 14px; }
table.docs td.num { font-variant-numeric: tabular-nums; }
form.create, form.add { display: flex; gap: 8px; margin: 12px 0; }
form.add { margin: 4px 0 0; }
input { flex: 1; padding: 6px 8px; border: 1px solid #ccc; border-radius: 4px; font: inherit; }
button { padding: 6px 12px; border: 1px solid #bbb; border-radius: 4px; background: #fff; font: inherit; cursor: pointer; }
button.danger { color: #a11; border-color: #e3b4b0; }
ul.rows { list-style: none; margin: 0; padding: 0; background: #fff; border: 1px solid #ddd; border-radius: 6px; min-height: 36px; }
li.row { display: flex; align-items: center; gap: 10px; padding: 9px 12px; border-bottom: 1px solid #eee; user-select: none; touch-action: none; cursor: grab; }
li.row:last-child { border-bottom: none; }
li.row:focus { outline: 2px solid #2a6fdb; outline-offset: -2px; }
li.row .handle { color: #aaa; }
li.row .text { flex: 1; }
li.row .who { font-size: 12px; color: #b35c00; }
:is(li.row, .section-head) .fields { display: flex; flex-wrap: wrap; gap: 6px; }
.section-head { display: flex; align-items: baseline; gap: 10px; flex-wrap: wrap; }
:is(li.row, .section-head) .field { font-size: 12px; padding: 1px 8px; border: 1px solid #cdd5e6; border-radius: 10px; background: #f2f5fb; }
:is(li.row, .section-head) form.field-edit { display: flex; gap: 4px; align-items: center; font-size: 12px; }
:is(li.row, .section-head) .field-counter, :is(li.row, .section-head) .set-edit, :is(li.row, .section-head) .members { display: inline-flex; gap: 2px; align-items: center; flex-wrap: wrap; }
:is(li.row, .section-head) .field-step, :is(li.row, .section-head) .field-add, :is(li.row, .section-head) .member-remove, :is(li.row, .section-head) .field-remove { font-size: 11px; padding: 0 6px; border-radius: 8px; }
:is(li.row, .section-head) .field-add { border: 1px dashed #cdd5e6; background: none; color: #556; }
:is(li.row, .section-head) form.field-new, :is(li.row, .section-head) form.member-add { display: flex; gap: 4px; align-items: center; font-size: 12px; }
:is(li.row, .section-head) .text-edit { display: flex; flex-wrap: wrap; gap: 4px; align-items: flex-start; font-size: 12px; }
:is(li.row, .section-head) .text-edit textarea { min-width: 260px; font: inherit; }
:is(li.row, .section-head) .carets { flex-basis: 100%; display: flex; gap: 8px; }
:is(li.row, .section-head) .remote-caret { color: #b35c00; }
li.row.lifted { opacity: .35; }
li.row.remote { background: #fff6e5; }
li.remote-place { height: 0; border-top: 2px dashed #d9822b; font-size: 11px; color: #b35c00; padding-left: 12px; list-style: none; }
.ghost { display: flex; align-items: center; gap: 10px; padding: 9px 12px; position: fixed; pointer-events: none; background: #fff; box-shadow: 0 6px 18px rgba(0,0,0,.18); border-radius: 6px; z-index: 10; }
.indicator { position: absolute; height: 4px; background: #2a6fdb; border-radius: 2px; pointer-events: none; z-index: 9; }
dl.figures { display: grid; grid-template-columns: max-content 1fr; gap: 6px 18px; background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 12px 16px; }
dl.figures dt { color: #666; }
dl.figures dd { margin: 0; font-variant-numeric: tabular-nums; }
canvas { background: #fff; border: 1px solid #ddd; border-radius: 6px; max-width: 100%; }
code { background: #eee; padding: 1px 4px; border-radius: 3px; }
"""#
}
