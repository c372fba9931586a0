// The inspector's page: plain HTML, CSS and a little JavaScript, shipped inside the binary (no framework, nothing
// fetched from the network; the Content-Security-Policy allows only this origin's own script and style).
public enum InspectorPage {
    /// A cookie, drawn.
    public static let favicon = """
        <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><circle cx="16" cy="16" r="14" fill="#c98a4b"/>\
        <circle cx="11" cy="11" r="2.5" fill="#5b3a1e"/><circle cx="20" cy="13" r="2" fill="#5b3a1e"/>\
        <circle cx="14" cy="21" r="2.5" fill="#5b3a1e"/><circle cx="22" cy="21" r="1.8" fill="#5b3a1e"/></svg>
        """

    public static let html = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>cookie-proxy inspector</title>
        <link rel="stylesheet" href="/app.css">
        <link rel="icon" href="/favicon.svg" type="image/svg+xml">
        </head>
        <body>
        <header>
          <h1>cookie-proxy</h1>
          <nav>
            <button class="tab active" data-tab="exchanges">Exchanges</button>
            <button class="tab" data-tab="jar">Browser's jar</button>
            <button class="tab" data-tab="rules">Rules</button>
          </nav>
          <input id="filter" type="search" placeholder="filter: text, host:, cookie:, rule:, finding:, verdict:" autocomplete="off">
          <button id="pause" type="button">Pause</button>
          <a id="har" href="/har" download="cookie-proxy.har">HAR</a>
          <span id="status"></span>
        </header>
        <main>
          <section id="exchanges" class="panel active">
            <div class="split">
              <table id="list">
                <thead><tr><th>Time</th><th>Client</th><th>Method</th><th>URL</th><th>Status</th><th>Cookies</th><th>Sent back?</th><th>Rules</th><th>Findings</th></tr></thead>
                <tbody id="rows"></tbody>
              </table>
              <div id="detail"><p class="hint">Select an exchange to see each Set-Cookie as received and as forwarded, what changed, which rule changed it, and what browsers will make of it.</p></div>
            </div>
          </section>
          <section id="jar" class="panel">
            <form id="jar-form">
              <label>Client <select id="jar-client"></select></label>
              <label>URL <input id="jar-url" type="url" placeholder="https://app.example.com/" size="40"></label>
              <button id="jar-go" type="submit">Show</button>
            </form>
            <p>A browser would send: <code id="jar-header"></code></p>
            <h2>Cookies held</h2>
            <table><thead><tr><th>Name</th><th>Value</th><th>Domain</th><th>Host-only</th><th>Path</th><th>Secure</th><th>HttpOnly</th><th>SameSite</th><th>Expires</th></tr></thead><tbody id="jar-cookies"></tbody></table>
            <h2>Rejected</h2>
            <table><thead><tr><th>Name</th><th>From</th><th>Why</th></tr></thead><tbody id="jar-rejected"></tbody></table>
          </section>
          <section id="rules" class="panel">
            <p id="reload"></p>
            <table><thead><tr><th>Rule</th><th>Where</th><th>Cookies matched (held exchanges)</th></tr></thead><tbody id="rules-body"></tbody></table>
          </section>
        </main>
        <script src="/app.js"></script>
        </body>
        </html>

        """

    public static let style = """
        *{box-sizing:border-box}
        body{margin:0;font:13px/1.4 system-ui,sans-serif;color:#1d1d1f;background:#fafafa}
        header{display:flex;gap:.6rem;align-items:center;padding:.4rem .8rem;background:#fff;border-bottom:1px solid #ddd;position:sticky;top:0}
        h1{font-size:15px;margin:0 .6rem 0 0}
        h2{font-size:13px;margin:1rem 0 .3rem}
        nav{display:flex;gap:.2rem}
        button,select,input{font:inherit}
        .tab{border:1px solid #ccc;background:#f4f4f4;border-radius:4px;padding:.2rem .6rem;cursor:pointer}
        .tab.active{background:#2d6cdf;color:#fff;border-color:#2d6cdf}
        #filter{flex:1;min-width:12rem;padding:.25rem .4rem}
        #status{color:#666}
        .panel{display:none;padding:.6rem .8rem}
        .panel.active{display:block}
        .split{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);gap:.8rem;align-items:start}
        @media (max-width:1499px){.split{grid-template-columns:minmax(0,1fr)}#detail{max-height:none}}
        table{border-collapse:collapse;width:100%;background:#fff}
        th,td{text-align:left;padding:.2rem .4rem;border-bottom:1px solid #eee;vertical-align:top;word-break:break-all}
        th{background:#f0f0f0;position:sticky;top:0;white-space:nowrap}
        #rows td{word-break:normal}
        #rows td:nth-child(4){word-break:break-all;min-width:12em}
        #rows td:nth-child(-n+3),#rows td:nth-child(5){white-space:nowrap}
        #rows td:nth-child(6),#rows td:nth-child(8){overflow-wrap:break-word}
        #rows td:nth-child(8){min-width:8em}
        #rows tr{cursor:pointer}
        #rows tr:hover{background:#eef4ff}
        #rows tr.selected{background:#dce8ff}
        .badge{white-space:nowrap;display:inline-block;border-radius:8px;padding:0 .4rem;margin-right:.2rem;font-size:11px;color:#fff}
        .rejects{background:#c62828}.warning{background:#ef6c00}.info{background:#607d8b}.ok{background:#2e7d32}
        #detail{background:#fff;border:1px solid #ddd;padding:.6rem;overflow:auto;max-height:85vh}
        #detail h2{word-break:break-all}
        .cookie{border-top:1px solid #eee;padding:.4rem 0}
        .line{font-family:ui-monospace,Menlo,monospace;white-space:pre-wrap;word-break:break-all}
        .change.add{color:#1b5e20}.change.remove,.change.drop{color:#b71c1c}.change.set,.change.rename,.change.value{color:#8d5b00}
        .hint{color:#666}
        code{font-family:ui-monospace,Menlo,monospace;background:#f2f2f2;padding:0 .2rem}

        """

    public static let script = """
        'use strict';
        const rows = [];
        let paused = false, queued = [], selected = null, skipped = 0;
        const $ = (id) => document.getElementById(id);
        const el = (tag, text, cls) => { const e = document.createElement(tag); if (text !== undefined) e.textContent = text; if (cls) e.className = cls; return e; };
        async function api(path) { const r = await fetch(path, {credentials: 'same-origin'}); if (!r.ok) throw new Error(path + ': ' + r.status); return r.json(); }

        function matches(row, query) {
          if (!query) return true;
          return query.toLowerCase().split(/\\s+/).filter(Boolean).every((term) => {
            const [key, ...rest] = term.split(':');
            const value = rest.join(':');
            const has = (list) => list.some((x) => x.toLowerCase().includes(value));
            if (rest.length && key === 'host') return row.host.toLowerCase().includes(value);
            if (rest.length && key === 'cookie') return has(row.setCookies.concat(row.sentCookies));
            if (rest.length && key === 'rule') return has(row.rules);
            if (rest.length && key === 'finding') return has(row.findings);
            if (rest.length && key === 'verdict') return has(Object.keys(row.verdicts || {}).filter((k) => row.verdicts[k] > 0));
            return [row.url, row.client, row.method, String(row.status)].concat(row.setCookies, row.sentCookies, row.rules, row.findings)
              .some((x) => x.toLowerCase().includes(term));
          });
        }

        function badges(sev) {
          const span = el('span');
          for (const level of ['rejects', 'warning', 'info']) if (sev[level] > 0) span.appendChild(el('span', level + ' ' + sev[level], 'badge ' + level));
          return span;
        }

        // The lifecycle's verdicts on the request's cookies, as badges: what came back, what did not.
        const verdictBadges = [['sent-as-expected', 'sent', 'ok'], ['expected-not-sent', 'missing', 'rejects'], ['sent-other-value', 'changed', 'warning'], ['sent-not-set', 'unknown', 'info']];
        function verdicts(v) {
          const span = el('span');
          if (!v) return span;
          for (const [kind, label, cls] of verdictBadges) if (v[kind] > 0) { const b = el('span', label + ' ' + v[kind], 'badge ' + cls); b.title = kind; span.appendChild(b); }
          return span;
        }

        function renderRow(row) {
          const tr = el('tr');
          tr.dataset.seq = row.seq;
          const cookies = row.setCookies.length ? 'set ' + row.setCookies.join(', ') : '';
          const sent = row.sentCookies.length ? 'sent ' + row.sentCookies.join(', ') : '';
          for (const text of [row.time.slice(11, 23), row.client, row.method, row.url, String(row.status), [cookies, sent].filter(Boolean).join(' · ')]) tr.appendChild(el('td', text));
          const back = el('td'); back.appendChild(verdicts(row.verdicts)); tr.appendChild(back);
          tr.appendChild(el('td', row.rules.join(', ')));
          const td = el('td'); td.appendChild(badges(row.severity)); tr.appendChild(td);
          tr.addEventListener('click', () => select(row.seq, tr));
          if (!matches(row, $('filter').value)) tr.hidden = true;
          $('rows').appendChild(tr);
        }

        function add(row) { rows.push(row); renderRow(row); status(); }
        function status() { $('status').textContent = rows.length + ' exchanges' + (paused ? ' · paused (' + queued.length + ' waiting)' : '') + (skipped ? ' · ' + skipped + ' more arrived faster than shown (reload for all)' : ''); }

        function refilter() {
          const q = $('filter').value;
          for (const tr of $('rows').children) { const row = rows.find((r) => String(r.seq) === tr.dataset.seq); tr.hidden = !row || !matches(row, q); }
        }

        async function select(seq, tr) {
          for (const other of $('rows').querySelectorAll('.selected')) other.classList.remove('selected');
          tr.classList.add('selected');
          selected = seq;
          const d = await api('/api/exchanges/' + seq);
          const box = $('detail');
          box.replaceChildren();
          box.appendChild(el('h2', d.method + ' ' + d.url + ' → ' + d.status));
          box.appendChild(el('p', 'client ' + d.protocol + ' · upstream ' + d.upstreamProtocol));
          box.appendChild(el('p', d.client + ' · ' + d.time + (d.dryRun ? ' · dry run: nothing was changed' : ''), 'hint'));
          if (d.requestCookies.length) box.appendChild(el('p', 'Cookie sent: ' + d.requestCookies.map((c) => c.name + '=' + c.value).join('; '), 'line'));
          if (d.lifecycle && d.lifecycle.verdicts.length) {
            const div = el('div', undefined, 'cookie lifecycle');
            div.appendChild(el('h2', 'Sent back? (' + d.lifecycle.site + ')'));
            div.appendChild(el('p', d.lifecycle.siteEvidence, 'hint'));
            const ul = el('ul', undefined, 'verdicts');
            for (const v of d.lifecycle.verdicts) {
              const li = el('li');
              const kind = verdictBadges.find((b) => b[0] === v.verdict) || [v.verdict, v.verdict, 'info'];
              li.appendChild(el('span', kind[1], 'badge ' + kind[2]));
              const name = el('a', v.cookie); name.href = '#'; name.title = 'timeline';
              name.addEventListener('click', (e) => { e.preventDefault(); timeline(v.cookie, d.lifecycle.client); });
              li.appendChild(name);
              li.appendChild(el('span', ' ' + v.verdict + (v.setBy ? ' (set by #' + v.setBy + ')' : '') + (v.reason ? ': ' + v.reason.message : '')));
              ul.appendChild(li);
            }
            div.appendChild(ul);
            box.appendChild(div);
          }
          for (const c of d.cookies) {
            const div = el('div', undefined, 'cookie');
            div.appendChild(el('h2', c.name || '(nameless)'));
            div.appendChild(el('div', 'received:  ' + c.received, 'line received'));
            div.appendChild(el('div', 'forwarded: ' + (c.forwarded === null ? '(dropped)' : c.forwarded), 'line forwarded'));
            if (c.wouldBe !== null) div.appendChild(el('div', 'rules would send: ' + c.wouldBe, 'line'));
            const ul = el('ul', undefined, 'changes');
            for (const ch of c.changes) ul.appendChild(el('li', ch.op + ' ' + ch.attribute + (ch.from !== null ? ' from ' + ch.from : '') + (ch.to !== null ? ' to ' + ch.to : ''), 'change ' + ch.op));
            if (c.changes.length) div.appendChild(ul);
            if (c.rules.length) div.appendChild(el('p', 'rules: ' + c.rules.map((r) => r.name + (r.location ? ' (' + r.location + ')' : '')).join(', '), 'rules'));
            for (const n of c.notes) div.appendChild(el('p', 'note: ' + n, 'hint'));
            const fl = el('ul', undefined, 'findings');
            for (const f of c.findings) { const li = el('li'); li.appendChild(el('span', f.severity, 'badge ' + f.severity)); li.appendChild(el('span', f.code + ': ' + f.message)); fl.appendChild(li); }
            if (c.findings.length) div.appendChild(fl);
            if (c.engines) div.appendChild(el('p', 'engines: ' + c.engines, 'engines'));
            box.appendChild(div);
          }
          const sent = d.requestSent ? [{ name: '', value: d.requestSent.line }].concat(d.requestSent.fields) : null;
          for (const [title, list] of [['Request as the client sent it', d.request], ['Request as sent upstream', sent], ['Response as received', d.responseReceived], ['Response as forwarded', d.responseForwarded]]) {
            if (!list) continue;
            box.appendChild(el('h2', title));
            box.appendChild(el('div', list.map((f) => (f.name ? f.name + ': ' : '') + f.value).join('\\n'), 'line'));
          }
        }

        // A cookie's timeline for one client: every Set-Cookie that touched it, every request that carried it or
        // should have.
        async function timeline(name, client) {
          const t = await api('/api/cookies/' + encodeURIComponent(name) + '?client=' + encodeURIComponent(client));
          const box = $('detail');
          box.replaceChildren(el('h2', 'Timeline of ' + name + ' for ' + client));
          const table = el('table');
          const head = el('tr');
          for (const h of ['Time', 'Request', 'What', 'Detail']) head.appendChild(el('th', h));
          table.appendChild(head);
          for (const e of t.events) {
            const tr = el('tr');
            const what = e.kind + (e.rules ? ' (rules: ' + e.rules.join(', ') + ')' : '');
            const detail = [e.forwarded ? 'forwarded: ' + e.forwarded : '', e.received && e.received !== e.forwarded ? 'received: ' + e.received : '', e.detail || ''].filter(Boolean).join(' · ');
            const requests = e.count > 1 ? '#' + e.requestId + '…#' + e.lastRequestId + ' (' + e.count + ' times, last ' + e.lastTime.slice(11, 23) + ')' : '#' + e.requestId;
            for (const v of [e.time.slice(11, 23), requests + ' ' + e.method + ' ' + e.url, what, detail]) tr.appendChild(el('td', v));
            table.appendChild(tr);
          }
          box.appendChild(table);
        }

        async function loadJar(event) {
          if (event) event.preventDefault();
          const clients = await api('/api/clients');
          const select = $('jar-client');
          const chosen = select.value;
          select.replaceChildren(...clients.map((c) => { const o = el('option', c); o.value = c; return o; }));
          if (clients.includes(chosen)) select.value = chosen;
          if (!select.value) return;
          const url = $('jar-url').value;
          const jar = await api('/api/jar?client=' + encodeURIComponent(select.value) + (url ? '&url=' + encodeURIComponent(url) : ''));
          $('jar-header').textContent = url ? (jar.cookieHeader || '(nothing)') : '(type a URL)';
          $('jar-cookies').replaceChildren(...jar.cookies.map((c) => { const tr = el('tr'); for (const v of [c.name, c.value, c.domain, c.hostOnly ? 'yes' : 'no', c.path, c.secure ? 'yes' : '', c.httpOnly ? 'yes' : '', c.sameSite, c.expires || 'session']) tr.appendChild(el('td', v)); return tr; }));
          $('jar-rejected').replaceChildren(...jar.rejected.map((r) => { const tr = el('tr'); for (const v of [r.name, r.url, r.reason]) tr.appendChild(el('td', v)); return tr; }));
        }

        async function loadRules() {
          const r = await api('/api/rules');
          $('rules-body').replaceChildren(...r.rules.map((x) => { const tr = el('tr'); for (const v of [x.name, x.location, String(x.hits)]) tr.appendChild(el('td', v)); return tr; }));
          $('reload').textContent = r.reload ? (r.reload.ok ? 'Last reload: ' : 'Last reload FAILED: ') + r.reload.time + ' — ' + r.reload.message : 'Rules as loaded at start; not reloaded since.';
        }

        for (const tab of document.querySelectorAll('.tab')) tab.addEventListener('click', () => {
          for (const t of document.querySelectorAll('.tab')) t.classList.toggle('active', t === tab);
          for (const p of document.querySelectorAll('.panel')) p.classList.toggle('active', p.id === tab.dataset.tab);
          if (tab.dataset.tab === 'jar') loadJar();
          if (tab.dataset.tab === 'rules') loadRules();
        });
        $('filter').addEventListener('input', refilter);
        $('jar-form').addEventListener('submit', loadJar);
        $('pause').addEventListener('click', () => {
          paused = !paused;
          $('pause').textContent = paused ? 'Resume' : 'Pause';
          if (!paused) { for (const row of queued) add(row); queued = []; }
          status();
        });

        (async () => {
          let last = 0;
          for (const row of await api('/api/exchanges')) { add(row); last = row.seq; }
          const events = new EventSource('/api/events');
          events.addEventListener('exchange', (e) => {
            const row = JSON.parse(e.data);
            if (row.seq <= last) return;
            last = row.seq;
            if (paused) { queued.push(row); status(); } else add(row);
          });
          events.addEventListener('open', () => { document.body.dataset.live = 'yes'; });
          events.addEventListener('skipped', (e) => { skipped += Number(e.data); status(); });
        })();

        """
}
