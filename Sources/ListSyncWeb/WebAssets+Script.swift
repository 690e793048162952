extension WebAssets {
    /// The page's script: plain JavaScript, no library. It draws the documents, a document (live
    /// over server-sent events, drag and drop in the deferred model, keyboard moves, the others'
    /// drags) and the status chart. Every text from the daemon goes in with `textContent`.
    /// `window.listsync` exposes what the browser tests read (when each row text was first drawn,
    /// the list drawn, moves sent, whether the daemon ended the session).
    static let script = #"""
'use strict';
(() => {
  const body = document.body;
  const page = body.dataset.page;
  const csrfMeta = document.querySelector('meta[name=csrf]');
  const csrf = csrfMeta ? csrfMeta.content : '';
  const main = document.getElementById('main');
  const banner = document.getElementById('banner');
  const live = document.getElementById('live');
  const state = { seen: {}, renders: 0, moves: 0, state: null, ended: null, connected: false, errors: [], splicesSent: 0, textMerges: 0 };
  window.listsync = state;

  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k === 'class') e.className = v;
      else if (k.startsWith('data-') || k.startsWith('aria-') || k === 'role') e.setAttribute(k, v);
      else e[k] = v;
    }
    for (const c of children) e.append(c);
    return e;
  }
  function say(text) { if (live) live.textContent = text; }
  function showBanner(text) { if (banner) { banner.textContent = text; banner.hidden = false; } state.errors.push(text); }
  async function post(url, params) {
    const q = new URLSearchParams(params || {}).toString();
    const r = await fetch(url + (q ? '?' + q : ''), { method: 'POST', headers: { 'X-ListSync-CSRF': csrf }, credentials: 'same-origin' });
    let j = {};
    try { j = await r.json(); } catch (_) {}
    if (!r.ok) throw new Error(j.error || r.statusText);
    return j;
  }
  function bytes(n) {
    if (n < 1024) return n + ' B';
    if (n < 1048576) return (n / 1024).toFixed(1) + ' KiB';
    return (n / 1048576).toFixed(1) + ' MiB';
  }

  const who = document.getElementById('who');
  if (who) who.textContent = body.dataset.who || '';
  const logout = document.getElementById('logout');
  if (logout) logout.addEventListener('click', () => post('/logout').catch(() => {}).finally(() => { location.href = '/'; }));

  // ---- The documents -------------------------------------------------------------------
  async function loadDocuments(periodic) {
    // A rename being typed is not wiped by the periodic refresh.
    if (periodic === true && document.querySelector('form.rename')) return;
    const r = await fetch('/api/docs', { credentials: 'same-origin' });
    const j = await r.json().catch(() => ({}));
    if (!r.ok) { showBanner(j.error || 'cannot list the documents'); return; }
    const rows = j.documents.map(d => {
      const del = el('button', { type: 'button', class: 'danger', textContent: 'Delete' });
      del.hidden = !j.operator;
      del.addEventListener('click', () => {
        if (del.dataset.armed !== '1') {
          del.dataset.armed = '1';
          del.textContent = 'Confirm delete';
          setTimeout(() => { del.dataset.armed = ''; del.textContent = 'Delete'; }, 4000);
          return;
        }
        post('/api/docs/' + d.id + '/destroy').then(loadDocuments, e => showBanner(e.message));
      });
      const nameCell = el('td', {}, el('a', { href: '/doc/' + d.id, textContent: d.name || '(no name)' }));
      const ren = el('button', { type: 'button', class: 'rename', textContent: 'Rename' });
      ren.hidden = j.readOnly;
      ren.addEventListener('click', () => {
        const input = el('input', { class: 'rename-name', value: d.name, maxLength: 200, 'aria-label': 'New name' });
        const save = el('button', { type: 'submit', class: 'rename-save', textContent: 'Save' });
        const form = el('form', { class: 'rename' }, input, save);
        form.addEventListener('submit', ev => {
          ev.preventDefault();
          if (!input.value) return;
          post('/api/docs/' + d.id + '/rename', { name: input.value })
            .then(r => { say('renamed to ' + r.name); form.remove(); loadDocuments(); }, e => showBanner(e.message));
        });
        form.addEventListener('keydown', ev => { if (ev.key === 'Escape') { form.remove(); loadDocuments(); } });
        nameCell.replaceChildren(form);
        input.focus();
        input.select();
      });
      return el('tr', { 'data-doc': d.id },
        nameCell,
        el('td', { class: 'num', textContent: d.operations === null ? 'not loaded' : String(d.operations) }),
        el('td', { class: 'num', textContent: bytes(d.bytes) }),
        el('td', { textContent: d.changed ? new Date(d.changed).toLocaleString() : '—' }),
        el('td', {}, ren, ' ', del));
    });
    const table = el('table', { class: 'docs' },
      el('thead', {}, el('tr', {}, el('th', { textContent: 'List' }), el('th', { textContent: 'Operations' }), el('th', { textContent: 'Folder on disk' }),
        el('th', { textContent: 'Last written' }), el('th', {}))),
      el('tbody', {}, ...rows));
    const name = el('input', { id: 'new-name', placeholder: 'New list name', maxLength: 200 });
    const make = el('button', { id: 'create', type: 'submit', textContent: 'Create' });
    const form = el('form', { class: 'create' }, name, make);
    form.hidden = j.readOnly;
    form.addEventListener('submit', ev => {
      ev.preventDefault();
      if (!name.value) return;
      post('/api/docs', { name: name.value }).then(r => { location.href = '/doc/' + r.id; }, e => showBanner(e.message));
    });
    const keep = document.activeElement === document.getElementById('new-name') ? document.getElementById('new-name').value : null;
    main.replaceChildren(rows.length ? table : el('p', { textContent: 'No lists yet.' }), form);
    if (keep !== null) { name.value = keep; name.focus(); }
  }

  // ---- A document ----------------------------------------------------------------------
  const docID = body.dataset.doc;
  let pending = null;     // a state that came while the pointer was down (drawn at the drop)
  let drag = null;        // the drag in progress
  let editing = null;     // the field being edited in place (a state that comes meanwhile: pending)
  let others = [];        // the others' activities (presence)
  let lastPresence = 0, presenceSent = '';

  function rowsOf(section, except) {
    return [...section.querySelectorAll('li.row')].filter(r => r.dataset.item !== except);
  }

  // Fields (Docs/Web.md, "Fields"): every kind is edited in place, and a row's or a section's
  // fields can be added and removed. A counter, a set or a text sends what the chip showed too (or
  // one step, one member), so that only this person's change is written. `key` names the record
  // in every request: { item: id } or { section: id }.
  function dateText(iso) {
    const d = new Date(iso);
    if (isNaN(d.getTime())) return iso;
    const t = d.toISOString();
    return t.slice(0, 10) + ' ' + t.slice(11, t.endsWith(':00.000Z') ? 16 : t.endsWith('.000Z') ? 19 : 23) + ' UTC';
  }
  function bytesText(b64) {
    let raw = '';
    try { raw = atob(b64); } catch (_) { return '(bytes)'; }
    let hex = '';
    for (let i = 0; i < Math.min(raw.length, 16); i++) hex += raw.charCodeAt(i).toString(16).padStart(2, '0');
    return raw.length + (raw.length === 1 ? ' byte' : ' bytes') + (raw.length ? ' ' + hex + (raw.length > 16 ? '…' : '') : '');
  }
  function fieldText(v) {
    if (v === null) return 'null';
    if (typeof v !== 'object') return String(v);
    if ('counter' in v) return String(v.counter);
    if ('set' in v) return '{' + v.set.join(', ') + '}';
    if ('date' in v) return dateText(v.date);
    if ('bytes' in v) return bytesText(v.bytes);
    return '';
  }
  function fieldKind(v, isText) {
    if (v === null) return 'null';
    if (typeof v === 'boolean') return 'bool';
    if (typeof v === 'number') return 'number';
    if (typeof v === 'string') return isText ? 'text' : 'string';
    if ('counter' in v) return 'counter';
    if ('set' in v) return 'set';
    if ('date' in v) return 'date';
    if ('bytes' in v) return 'bytes';
    return null;
  }
  function sendField(query) {
    return post('/api/docs/' + docID + '/field', query).catch(e => showBanner(e.message));
  }
  function fieldChips(record, key) {
    const box = el('span', { class: 'fields' });
    const f = record.fields || {}, texts = record.texts || [];
    for (const name of Object.keys(f).sort()) {
      const v = f[name], kind = fieldKind(v, texts.includes(name));
      const chip = el(kind ? 'button' : 'span', { class: 'field', 'data-name': name, textContent: name + ': ' + fieldText(v) });
      if (kind) {
        chip.type = 'button';
        chip.title = 'Edit ' + name + (kind === 'date' ? ' (' + v.date + ')' : '');
        chip.addEventListener('click', () => editField(chip, key, name, v, kind));
      }
      if (kind !== 'counter') { box.append(chip); continue; }
      // A counter's − and + buttons: one increment each, added to everyone else's.
      const step = (by, label) => {
        const b = el('button', { type: 'button', class: 'field-step', 'data-name': name, 'data-by': String(by), textContent: label, 'aria-label': (by > 0 ? 'Add 1 to ' : 'Take 1 from ') + name });
        b.addEventListener('click', () => sendField({ ...key, name: name, kind: 'counter', by: by }));
        return b;
      };
      box.append(el('span', { class: 'field-counter' }, step(-1, '−'), chip, step(1, '+')));
    }
    const add = el('button', { type: 'button', class: 'field-add', textContent: '+ field', title: 'Add a field' });
    add.addEventListener('click', () => newField(add, key));
    box.append(add);
    return box;
  }
  // Adding a field: a name, a kind and a first value (a counter starts at 0 when none is given);
  // refused by the daemon if the record has a field of that name by then (someone else added it
  // meanwhile: edit it instead).
  function newField(button, key) {
    editing = { key: key, name: null };
    const name = el('input', { class: 'field-new-name', placeholder: 'name', maxLength: 200, 'aria-label': 'Field name' });
    const kind = el('select', { class: 'field-new-kind', 'aria-label': 'Kind' },
      ...['string', 'number', 'bool', 'null', 'date', 'bytes', 'counter', 'set', 'text'].map(k => el('option', { value: k, textContent: k })));
    const value = el('input', { class: 'field-new-value', placeholder: 'value', 'aria-label': 'First value' });
    const form = el('form', { class: 'field-new' }, name, kind, value, el('button', { type: 'submit', textContent: 'Add' }));
    form.addEventListener('submit', ev => {
      ev.preventDefault();
      if (!name.value) return;
      const k = kind.value, query = { ...key, name: name.value, kind: k, new: '1' };
      if (k === 'counter') query.by = value.value || '0';
      else { query.value = value.value; if (k === 'set' || k === 'text') query.was = ''; }
      sendField(query).finally(() => finishEdit());
    });
    form.addEventListener('keydown', ev => { if (ev.key === 'Escape') { ev.stopPropagation(); finishEdit(); } });
    button.replaceWith(form);
    name.focus();
  }
  function finishEdit() {
    editing = null;
    const s = pending || state.state;
    pending = null;
    render(s);
  }
  // A text field is typed into live (Docs/Web.md, "Typing together"): each input event is sent at
  // once as a splice against the text shown when it was typed (the daemon carries it through what
  // others typed meanwhile); others' typing comes in without moving this person's caret or
  // selection; the caret is published as presence and others' carets are drawn under the box.
  let textEditor = null;
  function editText(chip, key, name, v) {
    editing = { key: key, name: name };
    const area = el('textarea', { class: 'field-text', 'aria-label': name, rows: 3 });
    area.value = v;
    const marks = el('div', { class: 'carets', 'aria-hidden': 'true' });
    const done = el('button', { type: 'button', class: 'text-done', textContent: 'Done' });
    const remove = el('button', { type: 'button', class: 'field-remove', textContent: 'Remove', title: 'Remove the field ' + name });
    const box = el('div', { class: 'text-edit', 'data-name': name }, el('span', { textContent: name + ':' }), area, done, remove, marks);
    let shown = v, inFlight = 0, waiting = null, queue = Promise.resolve(), caretSent = '', latest = 0;
    const high = c => c >= 0xD800 && c <= 0xDBFF, low = c => c >= 0xDC00 && c <= 0xDFFF;
    function sendCaret() {
      // Not while a keystroke is on its way: the daemon would read the caret against a text that
      // lacks it (the answer's `finally` sends it).
      if (inFlight > 0) return;
      const sel = area.selectionStart + ':' + area.selectionEnd + ':' + area.value.length;
      if (sel === caretSent || textEditor === null) return;
      caretSent = sel;
      post('/api/docs/' + docID + '/presence', { ...key, field: name, base: area.value, start: area.selectionStart, end: area.selectionEnd }).catch(() => {});
    }
    // The text as the daemon has it now: taken in when no keystroke of this page is on its way.
    function merge(text) {
      if (inFlight > 0) { waiting = text; return; }
      waiting = null;
      const old = area.value;
      if (text === old) { shown = text; return; }
      let p = 0;
      while (p < old.length && p < text.length && old[p] === text[p]) p++;
      if (p > 0 && high(old.charCodeAt(p - 1))) p--;
      let q = 0;
      while (q < old.length - p && q < text.length - p && old[old.length - 1 - q] === text[text.length - 1 - q]) q++;
      const cut = old.length - q, added = text.length - old.length;
      const move = c => c <= p ? c : c >= cut ? c + added : text.length - q;
      const a = move(area.selectionStart), b = move(area.selectionEnd);
      area.value = text;
      area.setSelectionRange(a, b);
      shown = text;
      state.textMerges += 1;
      sendCaret();
    }
    area.addEventListener('input', () => {
      const now = area.value, base = shown;
      let p = 0;
      while (p < base.length && p < now.length && base[p] === now[p]) p++;
      if (p > 0 && high(base.charCodeAt(p - 1))) p--;
      let q = 0;
      while (q < base.length - p && q < now.length - p && base[base.length - 1 - q] === now[now.length - 1 - q]) q++;
      if (q > 0 && low(base.charCodeAt(base.length - q))) q--;
      shown = now;
      const params = { ...key, name: name, base: base, at: p, delete: base.length - p - q, insert: now.slice(p, now.length - q) };
      inFlight += 1;
      queue = queue.then(() => post('/api/docs/' + docID + '/text', params))
        .then(j => { state.splicesSent += 1; latest = Math.max(latest, j.operations || 0); waiting = j.text; }, e => showBanner(e.message))
        .finally(() => { inFlight -= 1; if (inFlight === 0 && waiting !== null) merge(waiting); sendCaret(); });
    });
    for (const ev of ['select', 'keyup', 'mouseup', 'focus']) area.addEventListener(ev, sendCaret);
    textEditor = {
      item: key.item || key.section, name: name, marks: marks,
      update: d => {
        // A state older than this page's last keystroke's answer would take the keystroke back.
        if ((d.operations || 0) < latest) return;
        latest = d.operations || 0;
        for (const s of d.sections) for (const r of key.section ? [s] : s.items) {
          if (r.id === (key.item || key.section) && typeof (r.fields || {})[name] === 'string') merge(r.fields[name]);
        }
      },
    };
    const close = () => {
      textEditor = null;
      post('/api/docs/' + docID + '/presence', {}).catch(() => {});
      finishEdit();
    };
    done.addEventListener('click', close);
    remove.addEventListener('click', () => sendField({ ...key, name: name, kind: 'unset' }).finally(close));
    chip.replaceWith(box);
    area.focus();
    drawPresence();
  }

  function editField(chip, key, name, v, kind) {
    if (kind === 'text') { editText(chip, key, name, v); return; }
    editing = { key: key, name: name };
    const shown = kind === 'counter' ? String(v.counter) : kind === 'set' ? v.set.join(', ') : kind === 'date' ? v.date
                : kind === 'bytes' ? v.bytes : v === null ? '' : String(v);
    const input = kind === 'bool' ? el('input', { type: 'checkbox', class: 'field-value', checked: v, 'aria-label': name })
                                  : el('input', { class: 'field-value', value: shown, 'aria-label': name });
    const remove = el('button', { type: 'button', class: 'field-remove', textContent: 'Remove', title: 'Remove the field ' + name });
    remove.addEventListener('click', () => sendField({ ...key, name: name, kind: 'unset' }).finally(finishEdit));
    const form = el('form', { class: 'field-edit', 'data-name': name }, el('span', { textContent: name + ':' }), input,
                    el('button', { type: 'submit', textContent: 'Save' }), remove);
    form.addEventListener('submit', ev => {
      ev.preventDefault();
      const value = kind === 'bool' ? String(input.checked) : input.value;
      const query = { ...key, name: name, kind: kind === 'null' ? 'string' : kind, value: value };
      if (kind === 'counter' || kind === 'set') query.was = shown;
      sendField(query).finally(finishEdit);
    });
    form.addEventListener('keydown', ev => { if (ev.key === 'Escape') { ev.stopPropagation(); finishEdit(); } });
    if (kind !== 'set') { chip.replaceWith(form); input.focus(); return; }
    // A set: each member with a button that removes it alone, and a box that adds one member
    // (commas and all), besides the comma-separated list above.
    const members = el('span', { class: 'members' }, ...v.set.map(m => {
      const b = el('button', { type: 'button', class: 'member-remove', 'data-member': m, textContent: '× ' + m, title: 'Remove ' + m });
      b.addEventListener('click', () => sendField({ ...key, name: name, kind: 'set', remove: m }).finally(finishEdit));
      return b;
    }));
    const member = el('input', { class: 'member-new', placeholder: 'member', 'aria-label': 'Add to ' + name });
    const add = el('form', { class: 'member-add', 'data-name': name }, member, el('button', { type: 'submit', textContent: 'Add' }));
    add.addEventListener('submit', ev => {
      ev.preventDefault();
      if (!member.value) return;
      sendField({ ...key, name: name, kind: 'set', add: member.value }).finally(finishEdit);
    });
    add.addEventListener('keydown', ev => { if (ev.key === 'Escape') { ev.stopPropagation(); finishEdit(); } });
    chip.replaceWith(el('span', { class: 'set-edit', 'data-name': name }, form, members, add));
    input.focus();
  }

  function render(d) {
    state.state = d;
    state.renders += 1;
    const active = document.activeElement;
    const focused = active && active.dataset ? active.dataset.item : null;
    document.getElementById('title').textContent = d.name || '(no name)';
    document.title = (d.name || 'List') + ' · ListSync';
    const now = Date.now();
    const sections = d.sections.map(s => {
      const ul = el('ul', { class: 'rows', 'data-section': s.id, role: 'list' });
      for (const it of s.items) {
        if (!(it.text in state.seen)) state.seen[it.text] = now;
        ul.append(el('li', { class: 'row', tabIndex: 0, 'data-item': it.id, 'data-section': s.id, 'data-text': it.text, role: 'listitem',
                             'aria-roledescription': 'reorderable row' },
          el('span', { class: 'handle', textContent: '⠿', 'aria-hidden': 'true' }),
          el('span', { class: 'text', textContent: it.text }),
          fieldChips(it, { item: it.id }),
          el('span', { class: 'who' })));
      }
      const text = el('input', { class: 'add-text', placeholder: 'Add an item', maxLength: 1000 });
      const add = el('form', { class: 'add' }, text, el('button', { type: 'submit', textContent: 'Add' }));
      add.addEventListener('submit', ev => {
        ev.preventDefault();
        if (!text.value) return;
        const value = text.value;
        text.value = '';
        post('/api/docs/' + docID + '/insert', { section: s.id, text: value }).catch(e => showBanner(e.message));
      });
      // The section's own fields, beside its title, edited as a row's are.
      return el('section', { class: 'section', 'data-section': s.id },
        el('div', { class: 'section-head', 'data-section': s.id }, el('h2', { textContent: s.text || 'Untitled' }),
           fieldChips(s, { section: s.id })), ul, add);
    });
    main.replaceChildren(...sections);
    if (focused) {
      const f = main.querySelector('li.row[data-item="' + CSS.escape(focused) + '"]');
      if (f) f.focus();
    }
    drawPresence();
  }

  function drawPresence() {
    for (const r of main.querySelectorAll('li.row.remote')) { r.classList.remove('remote'); r.querySelector('.who').textContent = ''; }
    for (const h of main.querySelectorAll('.section-head.remote')) { h.classList.remove('remote'); h.removeAttribute('title'); }
    for (const m of document.querySelectorAll('.remote-place')) m.remove();
    if (textEditor) textEditor.marks.replaceChildren();
    for (const a of others) {
      if (a.kind === 'editing' && a.caret) {
        // A caret in an item's text field, or in a section's (`section` instead of `item`).
        const target = a.caret.item || a.caret.section;
        if (a.caret.item) {
          const r = main.querySelector('li.row[data-item="' + CSS.escape(a.caret.item) + '"]');
          if (r) { r.classList.add('remote'); r.querySelector('.who').textContent = a.name + ' is typing in ' + a.caret.field; }
        } else {
          const h = main.querySelector('.section-head[data-section="' + CSS.escape(a.caret.section) + '"]');
          if (h) { h.classList.add('remote'); h.title = a.name + ' is typing in ' + a.caret.field; }
        }
        if (textEditor && textEditor.item === target && textEditor.name === a.caret.field) {
          textEditor.marks.append(el('span', { class: 'remote-caret', 'data-name': a.name, 'data-anchor': String(a.caret.anchor),
                                               'data-head': String(a.caret.head), textContent: a.name + ' at ' + a.caret.head }));
        }
        continue;
      }
      if (a.kind !== 'dragging') continue;
      for (const id of a.items) {
        const r = main.querySelector('li.row[data-item="' + CSS.escape(id) + '"]');
        if (r) { r.classList.add('remote'); r.querySelector('.who').textContent = a.name + ' is moving this'; }
      }
      if (a.to) {
        const ul = main.querySelector('ul.rows[data-section="' + CSS.escape(a.to.section) + '"]');
        if (!ul) continue;
        const marker = el('li', { class: 'remote-place', 'aria-hidden': 'true', textContent: a.name });
        const rows = [...ul.querySelectorAll('li.row')];
        ul.insertBefore(marker, rows[a.to.row] || null);
      }
    }
  }

  // Where a row dropped at (x, y) lands, by identity: {section, after, before}.
  function placeAt(x, y) {
    const under = document.elementFromPoint(x, y);
    if (!under) return null;
    const row = under.closest('li.row');
    if (row) {
      const section = row.closest('section.section');
      const rows = rowsOf(section, drag.item);
      if (row.dataset.item === drag.item) {
        const all = [...section.querySelectorAll('li.row')];
        const i = all.indexOf(row);
        const after = all[i - 1], before = all[i + 1];
        return { section: section.dataset.section, after: after ? after.dataset.item : null, before: before ? before.dataset.item : null, el: row, top: true };
      }
      const i = rows.indexOf(row);
      const box = row.getBoundingClientRect();
      if (y < box.top + box.height / 2) {
        const after = rows[i - 1];
        return { section: section.dataset.section, after: after ? after.dataset.item : null, before: row.dataset.item, el: row, top: true };
      }
      const before = rows[i + 1];
      return { section: section.dataset.section, after: row.dataset.item, before: before ? before.dataset.item : null, el: row, top: false };
    }
    const section = under.closest('section.section');
    if (!section) return drag.place;
    const rows = rowsOf(section, drag.item);
    const ul = section.querySelector('ul.rows');
    const first = rows[0];
    if (!first || y < first.getBoundingClientRect().top) {
      return { section: section.dataset.section, after: null, before: first ? first.dataset.item : null, el: first || ul, top: true };
    }
    const last = rows[rows.length - 1];
    return { section: section.dataset.section, after: last.dataset.item, before: null, el: last, top: false };
  }

  function sendMove(item, place) {
    state.moves += 1;
    return post('/api/docs/' + docID + '/move', { item: item, section: place.section, after: place.after || '', before: place.before || '' })
      .catch(e => showBanner('The move failed: ' + e.message));
  }

  function sendPresence(place) {
    const key = place ? place.section + '/' + place.after + '/' + place.before : 'idle';
    const now = Date.now();
    if (key === presenceSent || (place && now - lastPresence < 120)) return;
    presenceSent = key;
    lastPresence = now;
    const params = place ? { item: drag.item, section: place.section, after: place.after || '', before: place.before || '' } : {};
    post('/api/docs/' + docID + '/presence', params).catch(() => {});
  }

  function startDrag(e) {
    drag.active = true;
    drag.row.classList.add('lifted');
    const box = drag.row.getBoundingClientRect();
    drag.dx = e.clientX - box.left;
    drag.dy = e.clientY - box.top;
    drag.ghost = el('div', { class: 'ghost', 'aria-hidden': 'true' }, ...[...drag.row.childNodes].map(n => n.cloneNode(true)));
    drag.ghost.style.width = box.width + 'px';
    drag.indicator = el('div', { class: 'indicator', 'aria-hidden': 'true' });
    document.body.append(drag.ghost, drag.indicator);
    say('Moving ' + drag.row.querySelector('.text').textContent);
  }

  function follow(e) {
    drag.ghost.style.left = (e.clientX - drag.dx) + 'px';
    drag.ghost.style.top = (e.clientY - drag.dy) + 'px';
    const place = placeAt(e.clientX, e.clientY);
    if (!place) return;
    drag.place = place;
    const box = place.el.getBoundingClientRect();
    drag.indicator.style.left = (box.left + window.scrollX) + 'px';
    drag.indicator.style.width = box.width + 'px';
    drag.indicator.style.top = ((place.top ? box.top : box.bottom) + window.scrollY - 2) + 'px';
    sendPresence(place);
  }

  function finishDrag(commit) {
    const d = drag;
    drag = null;
    if (d.active) {
      d.row.classList.remove('lifted');
      d.ghost.remove();
      d.indicator.remove();
      presenceSent = '';
      lastPresence = 0;
      post('/api/docs/' + docID + '/presence', {}).catch(() => {});
      if (commit && d.place) {
        sendMove(d.item, d.place).then(() => say('Moved'));
      } else {
        say('Move cancelled');
      }
    }
    if (pending) { const s = pending; pending = null; render(s); }
  }

  function keyMove(row, dir) {
    const item = row.dataset.item;
    const section = row.closest('section.section');
    const rows = [...section.querySelectorAll('li.row')];
    const i = rows.indexOf(row);
    const id = r => (r ? r.dataset.item : null);
    let place;
    if (dir < 0) {
      if (i > 0) place = { section: section.dataset.section, after: id(rows[i - 2]), before: id(rows[i - 1]) };
      else {
        const prev = section.previousElementSibling;
        if (!prev) return;
        const pr = [...prev.querySelectorAll('li.row')];
        place = { section: prev.dataset.section, after: id(pr[pr.length - 1]), before: null };
      }
    } else {
      if (i < rows.length - 1) place = { section: section.dataset.section, after: id(rows[i + 1]), before: id(rows[i + 2]) };
      else {
        const next = section.nextElementSibling;
        if (!next) return;
        const nr = [...next.querySelectorAll('li.row')];
        place = { section: next.dataset.section, after: null, before: id(nr[0]) };
      }
    }
    sendMove(item, place).then(() => say('Moved ' + row.querySelector('.text').textContent + (dir < 0 ? ' up' : ' down')));
  }

  function startDocument() {
    main.addEventListener('pointerdown', e => {
      if (e.button !== 0 || drag) return;
      if (e.target.closest('input, button, form')) return;
      const row = e.target.closest('li.row');
      if (!row) return;
      e.preventDefault();
      row.focus();
      drag = { row: row, item: row.dataset.item, pointerId: e.pointerId, x0: e.clientX, y0: e.clientY, active: false, place: null };
      row.setPointerCapture(e.pointerId);
    });
    main.addEventListener('pointermove', e => {
      if (!drag || e.pointerId !== drag.pointerId) return;
      if (!drag.active) {
        if (Math.hypot(e.clientX - drag.x0, e.clientY - drag.y0) < 4) return;
        startDrag(e);
      }
      follow(e);
    });
    main.addEventListener('pointerup', e => { if (drag && e.pointerId === drag.pointerId) finishDrag(true); });
    main.addEventListener('pointercancel', e => { if (drag && e.pointerId === drag.pointerId) finishDrag(false); });
    document.addEventListener('keydown', e => { if (drag && e.key === 'Escape') finishDrag(false); });
    main.addEventListener('keydown', e => {
      const row = e.target.closest ? e.target.closest('li.row') : null;
      if (!row || drag || e.target.closest('form')) return;
      if (e.key === 'ArrowUp' || e.key === 'ArrowDown') {
        e.preventDefault();
        if (e.altKey) { keyMove(row, e.key === 'ArrowUp' ? -1 : 1); return; }
        const all = [...main.querySelectorAll('li.row')];
        const next = all[all.indexOf(row) + (e.key === 'ArrowUp' ? -1 : 1)];
        if (next) next.focus();
      }
    });

    const events = new EventSource('/api/docs/' + docID + '/events');
    events.addEventListener('open', () => { state.connected = true; });
    events.addEventListener('state', e => {
      const d = JSON.parse(e.data);
      if (drag || editing) pending = d; else render(d);
      if (textEditor) textEditor.update(d);
    });
    events.addEventListener('presence', e => { others = JSON.parse(e.data); drawPresence(); });
    events.addEventListener('ended', e => {
      state.ended = e.data;
      state.connected = false;
      events.close();
      showBanner('The daemon ended this session: ' + e.data);
    });
    events.addEventListener('error', () => {
      if (events.readyState === EventSource.CLOSED) {
        state.connected = false;
        showBanner('Disconnected from the daemon; run `listsync open` for a new session.');
      }
    });
  }

  // ---- Status --------------------------------------------------------------------------
  const samples = [];
  let previous = null;
  function startStatus() {
    const figures = el('dl', { class: 'figures' });
    const canvas = el('canvas', { id: 'chart', width: 720, height: 260 });
    main.replaceChildren(figures, el('h2', { textContent: 'The last two minutes' }), canvas);
    const poll = async () => {
      const r = await fetch('/api/status', { credentials: 'same-origin' });
      const j = await r.json().catch(() => ({}));
      if (!r.ok) { showBanner(j.error || 'no status'); return; }
      const t = Date.now();
      const rate = previous ? Math.max(0, (j.operations_in - previous.ops) / ((t - previous.t) / 1000)) : 0;
      previous = { t: t, ops: j.operations_in };
      samples.push({ rate: rate, p50: j.fsync_p50_ms, p99: j.fsync_p99_ms });
      if (samples.length > 120) samples.shift();
      const rows = [['Connections', j.connections], ['Documents on disk', j.documents_on_disk],
        ['Documents in memory', j.documents_resident], ['Operations per second', rate.toFixed(1)],
        ['Operations received', j.operations_in],
        ['fsync p50 / p99 (ms, since start)', j.fsync_p50_ms === undefined ? '—' : j.fsync_p50_ms.toFixed(2) + ' / ' + j.fsync_p99_ms.toFixed(2)],
        ['Bytes on disk', bytes(j.bytes_on_disk || 0)], ['Memory (RSS)', bytes(j.rss_bytes || 0)], ['Storage', j.storage]];
      figures.replaceChildren(...rows.flatMap(([k, v]) => [el('dt', { textContent: k }), el('dd', { textContent: String(v) })]));
      draw(canvas);
    };
    poll();
    setInterval(poll, 1000);
  }

  function draw(canvas) {
    const g = canvas.getContext('2d');
    const w = canvas.width, h = canvas.height, half = (h - 30) / 2;
    g.clearRect(0, 0, w, h);
    g.font = '12px system-ui, sans-serif';
    const panel = (top, values, color, label) => {
      const max = Math.max(1, ...values.filter(v => typeof v === 'number'));
      g.strokeStyle = '#ccc';
      g.strokeRect(40, top, w - 50, half - 10);
      g.fillStyle = '#444';
      g.fillText(label + ' (max ' + max.toFixed(max < 10 ? 2 : 0) + ')', 44, top + 14);
      g.strokeStyle = color;
      g.lineWidth = 2;
      g.beginPath();
      let first = true;
      values.forEach((v, i) => {
        if (typeof v !== 'number') return;
        const x = 40 + (w - 50) * (i + 120 - values.length) / 119, y = top + half - 10 - (half - 30) * v / max;
        if (first) g.moveTo(x, y); else g.lineTo(x, y);
        first = false;
      });
      g.stroke();
    };
    panel(5, samples.map(s => s.rate), '#2a6fdb', 'operations per second');
    panel(15 + half, samples.map(s => s.p99), '#d9822b', 'fsync p99, ms');
  }

  if (page === 'documents') { loadDocuments(); setInterval(() => loadDocuments(true), 5000); }
  if (page === 'document') startDocument();
  if (page === 'status') startStatus();
})();
"""#
}
