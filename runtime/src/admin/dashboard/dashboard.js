// The cronslot dashboard: reads the admin routes' JSON and posts their
// actions, with the bearer token from this tab's sessionStorage. Data is
// only ever written with textContent, never parsed as HTML.
"use strict";
(function () {
  const base = document.body.dataset.base || "";
  const KEY = "cronslot-admin-token";
  const REFRESH_MS = 15000;
  const $ = (id) => document.getElementById(id);
  const view = $("view");

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const kid of kids.flat()) {
      if (kid === undefined || kid === null || kid === false) continue;
      e.append(kid instanceof Node ? kid : String(kid));
    }
    return e;
  }
  const token = () => sessionStorage.getItem(KEY);

  class Unauthorized extends Error {}

  async function api(method, path, headers) {
    const t = token();
    if (!t) throw new Unauthorized("no token");
    const r = await fetch(base + path, {
      method,
      headers: Object.assign({ Authorization: "Bearer " + t }, headers || {}),
      cache: "no-store",
      credentials: "omit",
      referrerPolicy: "no-referrer",
    });
    let body = null;
    try { body = await r.json(); } catch (_) { /* not JSON */ }
    if (r.status === 401) throw new Unauthorized((body && body.message) || "unauthorized");
    if (!body) throw new Error(method + " " + path + ": HTTP " + r.status);
    return { status: r.status, body };
  }

  // A document a view reads; an error's message when the route refuses
  // (a host that serves no keyed runs, a job gone from the manifest).
  async function read(path) {
    const { status, body } = await api("GET", path);
    if (status >= 300) throw new Error(body.message || "GET " + path + ": HTTP " + status);
    return body;
  }

  // Time.
  const ms = (t) => (t ? Date.parse(t) : NaN);
  function ago(t, now) {
    const s = Math.round((now - ms(t)) / 1000);
    if (!isFinite(s)) return "";
    const a = Math.abs(s);
    const span = a < 90 ? a + "s" : a < 5400 ? Math.round(a / 60) + "m" : a < 172800 ? Math.round(a / 3600) + "h" : Math.round(a / 86400) + "d";
    return s >= 0 ? span + " ago" : "in " + span;
  }
  function inZone(t, zone) {
    try {
      return new Intl.DateTimeFormat("en-CA", {
        timeZone: zone || "UTC", year: "numeric", month: "2-digit", day: "2-digit",
        hour: "2-digit", minute: "2-digit", hour12: false, timeZoneName: "short",
      }).format(new Date(ms(t)));
    } catch (_) { return t; }
  }
  const when = (t, zone, now) => (t ? [inZone(t, zone), el("span", { class: "sub" }, ago(t, now))] : "—");
  function duration(msSpan) {
    if (!isFinite(msSpan)) return "—";
    const s = msSpan / 1000;
    return s < 1 ? Math.round(msSpan) + " ms" : s < 120 ? s.toFixed(1) + " s" : Math.round(s / 60) + " min";
  }

  // Health: paused, late, stale, never ran (or never succeeded), ok.
  function health(j) {
    if (j.paused) return "paused";
    if (j.late_since) return "late";
    if (j.stale) return "stale";
    if (!j.last_success) return j.runs ? "never succeeded" : "never ran";
    return "ok";
  }
  const badge = (text) => el("span", { class: "badge b-" + text.replace(/ /g, "-") }, text);
  function lastLag(rec) {
    const h = (rec && rec.history) || [];
    const last = h[h.length - 1];
    return last ? ms(last.started_at) - ms(last.slot) : NaN;
  }
  const jobLink = (name) => el("a", { href: "#/job/" + encodeURIComponent(name) }, name);
  const cell = (label, ...kids) => el("td", { "data-label": label }, ...kids);
  // When a slot starts, where jitter moves it from its instant.
  const starts = (n, zone) => cell("Starts", n.starts === n.slot ? "" : inZone(n.starts, zone) + " (jitter)");

  function notice(text) { $("notice").textContent = text || ""; }

  // What an action's answer says, in a sentence.
  function outcome(status, body) {
    if (body.message) return body.message;
    if (status >= 300) return "Failed: HTTP " + status;
    if (Array.isArray(body.redriven)) return body.redriven.length + " dead letter(s) of " + (body.key ? body.key + " of " : "") + body.job + " sent back to run.";
    if (Array.isArray(body.slots)) return body.slots.length + " slot(s) of " + body.job + " queued to run again.";
    if (typeof body.paused === "boolean") return body.job + (body.paused ? " is paused." : " runs again.") + (body.changed ? "" : " (It already was.)");
    if (body.key && typeof body.version === "number") return "Schedule " + body.key + " of " + body.job + " deleted (its tombstone holds version " + body.version + ").";
    return "Done.";
  }

  let carried = "";
  // Asks, acts, says what came of it; then `then` (a new hash) or a
  // re-render of this view.
  async function act(question, method, path, headers, then) {
    if (!window.confirm(question)) return;
    try {
      const { status, body } = await api(method, path, headers);
      notice(outcome(status, body));
      if (then && status < 300) {
        // The outcome outlives the change of view it leads to.
        carried = outcome(status, body);
        location.hash = then;
        return;
      }
    } catch (e) { fail(e); }
    render();
  }

  // Views.
  // The jobs, a page at a time in manifest order, found by name.
  const jobsHash = (q) => {
    const text = params(q, ["search", "after"]).toString();
    return "#/" + (text ? "jobs?" + text : "");
  };
  async function jobsView(q) {
    const { body: s } = await api("GET", "/status?" + params(q, ["search", "after"], { limit: PAGE }));
    const now = ms(s.now);
    const search = el("input", { name: "search", placeholder: "job name", value: q.search || "", size: 16 });
    const filter = el("form", { id: "job-search", onsubmit: (e) => {
      e.preventDefault();
      location.hash = jobsHash({ search: search.value.trim() });
    } }, search, el("button", { type: "submit" }, "Search"));
    const rows = s.jobs.map((j) => el("tr", { "data-job": j.job },
      cell("Job", jobLink(j.job)),
      cell("Schedule", el("code", {}, j.schedule), el("span", { class: "sub" }, j.explanation + (j.timezone ? ", " + j.timezone : ""))),
      cell("Health", badge(health(j))),
      cell("Last 24 h", fateStrip(j.record, now)),
      cell("Last success", when(j.last_success, j.timezone, now)),
      cell("Next slot", when(j.next_slot, j.timezone, now)),
      cell("Lag of last run", duration(lastLag(j.record))),
      cell("Live leases", j.live_leases),
      cell("Dead letters", j.dead_letters ? el("a", { href: "#/dlq" }, j.dead_letters) : "0"),
    ));
    const dynamic = s.dynamic_jobs || [];
    return [
      el("h1", {}, "Jobs (" + (s.matched === undefined ? s.jobs.length : s.matched) + ")"),
      filter,
      s.jobs.length ? el("table", { id: "jobs" },
        el("thead", {}, el("tr", {}, ["Job", "Schedule", "Health", "Last 24 h", "Last success", "Next slot", "Lag of last run", "Live leases", "Dead letters"].map((h) => el("th", {}, h)))),
        el("tbody", {}, rows)) : el("p", {}, "No job " + (q.search ? "named like " + q.search : "here") + "."),
      el("p", { class: "actions" },
        q.after ? el("a", { id: "first-page", href: jobsHash({ search: q.search }) }, "First page") : null,
        s.cursor ? el("a", { id: "next-page", href: jobsHash({ search: q.search, after: s.cursor }) }, "Next page") : null),
      dynamic.length ? [
        el("h2", {}, "Dynamic jobs (" + dynamic.length + ")"),
        el("p", {}, "Their schedules and keyed runs are data, written by the application: one page of each per job."),
        el("ul", { id: "dynamic" }, dynamic.map((name) => el("li", {}, el("a", { href: schedulesHash(name, {}) }, name), " · ", el("a", { class: "runs-link", href: runsHash(name, {}) }, "keyed runs")))),
      ] : null,
    ];
  }

  // A dynamic job's lists (its schedules, its keyed runs), 50 a page: the
  // hash keeps the filter and the page.
  const PAGE = 50;
  const params = (q, keys, init) => {
    const p = new URLSearchParams(init);
    for (const k of keys) if (q[k]) p.set(k, q[k]);
    return p;
  };
  const listHash = (kind, keys) => (job, q) => {
    const text = params(q, keys).toString();
    return "#/" + kind + "/" + encodeURIComponent(job) + (text ? "?" + text : "");
  };
  const schedulesHash = listHash("schedules", ["prefix", "label", "cursor"]);
  const runsHash = listHash("runs", ["prefix", "status", "cursor", "order"]);
  // A page read, or why it is empty; then the way to the first and next.
  function listed(id, heads, rows, what, hash, job, q, cursor) {
    const keep = Object.assign({}, q, { cursor: undefined });
    return [
      rows.length
        ? el("table", { id }, el("thead", {}, el("tr", {}, heads.map((h) => el("th", {}, h)))), el("tbody", {}, rows))
        : el("p", {}, cursor ? "None on this page: the filter matched none of the keys read. Go on to the next page." : "No " + what + (q.cursor ? " after this point." : ".")),
      el("p", { class: "actions" },
        q.cursor ? el("a", { id: "first-page", href: hash(job, keep) }, "First page") : null,
        cursor ? el("a", { id: "next-page", href: hash(job, Object.assign(keep, { cursor })) }, "Next page") : null),
    ];
  }
  // A dynamic job's two lists, side by side.
  const tabs = (job, on) => el("p", { class: "tabs" },
    el("a", { href: schedulesHash(job, {}), "aria-current": on === "schedules" && "page" }, "Schedules"),
    el("a", { id: "runs-tab", href: runsHash(job, {}), "aria-current": on === "runs" && "page" }, "Keyed runs"));
  const scheduleHash = (job, key) => "#/schedule/" + encodeURIComponent(job) + "/" + encodeURIComponent(key);
  const whenOf = (spec) => (spec.at ? "once, at " + spec.at : spec.cron);
  const labelsOf = (spec) => Object.entries(spec.labels || {}).map(([k, v]) => k + "=" + v).join(", ");

  async function schedulesView(job, q) {
    const page = await read("/schedules/" + encodeURIComponent(job) + "?" + params(q, ["prefix", "label", "cursor"], { limit: PAGE }));
    const now = ms(page.now);
    const prefix = el("input", { name: "prefix", placeholder: "key prefix", value: q.prefix || "", size: 16 });
    const label = el("input", { name: "label", placeholder: "label NAME:VALUE", value: q.label || "", size: 18 });
    const filter = el("form", { id: "filter", onsubmit: (e) => {
      e.preventDefault();
      location.hash = schedulesHash(job, { prefix: prefix.value.trim(), label: label.value.trim() });
    } }, prefix, label, el("button", { type: "submit" }, "Filter"));
    const rows = page.schedules.map((x) => el("tr", { "data-key": x.key },
      cell("Key", el("a", { href: scheduleHash(job, x.key) }, x.key)),
      cell("When", el("code", {}, whenOf(x.spec)), el("span", { class: "sub" }, x.spec.timezone)),
      cell("Labels", labelsOf(x.spec)),
      cell("State", badge(x.spec.paused ? "paused" : "ok")),
      cell("Version", x.version),
      cell("Next slot", when(x.next, x.spec.timezone, now)),
    ));
    return [
      el("h1", {}, job, " ", el("span", { class: "sub" }, "schedules")),
      tabs(job, "schedules"),
      filter,
      listed("schedules", ["Key", "When", "Labels", "State", "Version", "Next slot"], rows, "schedules", schedulesHash, job, q, page.cursor),
    ];
  }

  // A dynamic job's keyed runs: a page in key order (the keys are the
  // application's), filtered by key prefix and status; `order=recent`
  // shows the page read newest first.
  const STATUSES = ["pending", "running", "retrying", "succeeded", "dead"];
  async function runsView(job, q) {
    const page = await read("/runs/" + encodeURIComponent(job) + "?" + params(q, ["prefix", "status", "cursor"], { limit: PAGE }));
    const now = ms(page.now);
    const recent = q.order === "recent";
    const prefix = el("input", { name: "prefix", placeholder: "key prefix", value: q.prefix || "", size: 16 });
    const option = (value, text, chosen) => el("option", { value, selected: chosen === value }, text);
    const status = el("select", { name: "status", "aria-label": "status" }, option("", "any status", q.status || ""), STATUSES.map((s) => option(s, s, q.status)));
    const order = el("select", { name: "order", "aria-label": "order" }, option("", "key order", q.order || ""), option("recent", "newest first on this page", q.order));
    const filter = el("form", { id: "filter", onsubmit: (e) => {
      e.preventDefault();
      location.hash = runsHash(job, { prefix: prefix.value.trim(), status: status.value, order: order.value });
    } }, prefix, status, order, el("button", { type: "submit" }, "Filter"));
    const runs = page.runs.slice();
    if (recent) runs.sort((a, b) => ms(b.enqueued) - ms(a.enqueued) || (a.key < b.key ? -1 : 1));
    const ops = "/jobs/" + encodeURIComponent(job) + "/redrive?key=";
    const rows = runs.map((r) => el("tr", { "data-key": r.key, "data-status": r.status },
      cell("Key", el("code", {}, r.key), el("span", { class: "sub" }, "slot " + inZone(r.at, "UTC"))),
      cell("Status", badge(r.status), r.next_attempt ? el("span", { class: "sub" }, ms(r.next_attempt) <= now ? "due now" : (r.status === "pending" ? "due " : "next attempt ") + ago(r.next_attempt, now)) : null),
      cell("Attempts", r.attempts),
      cell("Last error", r.last_error || "—"),
      cell("Enqueued", when(r.enqueued, "UTC", now)),
      cell("Started", when(r.started, "UTC", now)),
      cell("Finished", when(r.finished, "UTC", now)),
      cell("", r.status === "dead"
        ? el("button", { type: "button", class: "redrive", onclick: () => act("Send the dead run " + r.key + " of " + job + " back to run?", "POST", ops + encodeURIComponent(r.key)) }, "Redrive")
        : null),
    ));
    return [
      el("h1", {}, job, " ", el("span", { class: "sub" }, "keyed runs")),
      tabs(job, "runs"),
      filter,
      recent && rows.length ? el("p", { class: "sub" }, "Newest first among this page's runs; pages go in key order.") : null,
      listed("runs", ["Key", "Status", "Attempts", "Last error", "Enqueued", "Started", "Finished", ""], rows, "keyed runs", runsHash, job, q, page.cursor),
    ];
  }

  async function scheduleView(job, key) {
    const path = "/schedules/" + encodeURIComponent(job) + "/" + encodeURIComponent(key);
    const { body: d } = await api("GET", path);
    const now = ms(d.now);
    const j = d.status;
    const zone = d.spec.timezone;
    const ops = "/jobs/" + encodeURIComponent(job);
    const withKey = "?key=" + encodeURIComponent(key);
    const who = key + " of " + job;
    const spec = [
      ["When", el("code", {}, whenOf(d.spec))],
      ["Zone", zone],
      ["Start", d.spec.start || "—"],
      ["End", d.spec.end || "—"],
      ["Labels", labelsOf(d.spec) || "—"],
      ["Payload", d.spec.payload === undefined ? "—" : el("pre", { id: "payload" }, JSON.stringify(d.spec.payload, null, 2))],
      ["Version", d.version + ", written " + inZone(d.changed_at, zone)],
    ];
    return [
      el("h1", {}, el("a", { href: schedulesHash(job, {}) }, job), " / " + key, " ", badge(health(j))),
      el("table", { id: "spec" }, el("tbody", {}, spec.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, v))))),
      el("div", { class: "actions" },
        el("button", { id: "trigger", type: "button", onclick: () => act("Run the current slot of " + who + " now?", "POST", ops + "/trigger" + withKey) }, "Trigger now"),
        j.paused
          ? el("button", { id: "resume", type: "button", onclick: () => act("Resume " + who + "?", "POST", ops + "/resume" + withKey) }, "Resume")
          : el("button", { id: "pause", type: "button", class: "danger", onclick: () => act("Pause " + who + "? Its slots are skipped until it is resumed.", "POST", ops + "/pause" + withKey) }, "Pause"),
        j.dead_letters ? el("button", { id: "redrive-all", type: "button", onclick: () => act("Send all " + j.dead_letters + " dead letters of " + who + " back to run?", "POST", ops + "/redrive" + withKey) }, "Redrive all") : null,
        // Conditional on the version shown: a schedule changed since this
        // page was read is not deleted by mistake.
        el("button", { id: "delete", type: "button", class: "danger", onclick: () => act("Delete " + who + " (version " + d.version + ")? No slot of it runs after now.", "DELETE", path, { "If-Match": '"' + d.version + '"' }, schedulesHash(job, {})) }, "Delete")),
      el("p", {}, "Last success: ", when(j.last_success, zone, now), " · runs " + j.runs + ", succeeded " + j.succeeded + ", failed " + j.failed + ", fence " + j.fence),
      counts("Missed slots", j.missed, "missed"),
      counts("Skipped slots", j.skipped, "skipped"),
      el("h2", {}, "Recent slots"),
      slotChart(j.record, zone, now, d.spec.jitter),
      timeline(j.record, zone, now),
      el("h2", {}, "Next slots"),
      d.next.length
        ? el("table", { id: "next" }, el("tbody", {}, d.next.map((n) => el("tr", {}, cell("Slot", when(n.slot, zone, now)), cell("UTC", el("code", {}, n.slot)), starts(n, zone)))))
        : el("p", {}, j.paused ? "None while paused." : "No slot left in its window."),
    ];
  }

  function timeline(rec, zone, now) {
    const rows = [];
    for (const l of rec.leases || []) rows.push({ slot: l.slot, attempt: l.attempt, fate: "running", detail: "attempt " + l.attempt + ", fence " + l.fence + ", " + l.owner + ", lease until " + inZone(l.expires_at, zone) });
    // A waiting run: a retry, or a slot an operator queued (backfill, redrive, trigger).
    for (const p of rec.pending || []) rows.push({ slot: p.slot, attempt: p.attempt, fate: !p.origin || p.origin === "schedule" ? "retrying" : "queued", detail: "attempt " + p.attempt + " not before " + inZone(p.not_before, zone) + (p.last_error ? ": " + p.last_error : "") + (p.origin && p.origin !== "schedule" ? " (" + p.origin + ")" : "") });
    for (const d of rec.dead || []) rows.push({ slot: d.slot, attempt: d.attempts + 0.5, fate: "dead", detail: d.attempts + " attempts, fence " + d.fence + ": " + d.last_error });
    for (const r of rec.history || []) {
      let fate = r.outcome;
      if (fate === "lease_expired") fate = "expired";
      else if (fate === "failed") fate = r.permanent ? "failed" : "retried";
      rows.push({ slot: r.slot, attempt: r.attempt, fate, detail: "attempt " + r.attempt + ", fence " + r.fence + ", " + r.owner + ", " + duration(ms(r.finished_at) - ms(r.started_at)) + (r.error ? ": " + r.error : r.result ? ": " + r.result : "") });
    }
    for (const f of rec.fates || []) {
      const reason = f.reason.replace(/_/g, " ");
      rows.push({ slot: f.last, fate: f.fate, detail: f.slots > 1 ? reason + ": " + f.slots + " slots from " + inZone(f.first, zone) : reason });
    }
    // Newest slot first; within a slot, the latest attempt first.
    rows.sort((a, b) => ms(b.slot) - ms(a.slot) || (b.attempt || 0) - (a.attempt || 0));
    if (!rows.length) return el("p", {}, "No runs recorded yet.");
    return el("table", { id: "timeline" },
      el("thead", {}, el("tr", {}, ["Slot", "Fate", "Detail"].map((h) => el("th", {}, h)))),
      el("tbody", {}, rows.map((r) => el("tr", {}, cell("Slot", when(r.slot, zone, now)), cell("Fate", badge(r.fate)), cell("Detail", r.detail)))));
  }

  // Pictures: SVG built with the DOM and coloured by the style sheet's
  // classes (no inline style or script: the page's policy holds).
  const SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, ...kids) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) e.setAttribute(k, v);
    for (const k of kids.flat()) if (k) e.append(k);
    return e;
  }
  // The fate a history entry shows (as the timeline's badges).
  function runFate(r) {
    if (r.outcome === "lease_expired") return "expired";
    if (r.outcome === "failed") return r.permanent ? "failed" : "retried";
    return r.outcome;
  }
  // What a record says happened, as marks on a time axis: runs (a bar
  // from start to end, a lease still held running to now), dead letters,
  // waiting runs, and the spans of missed and skipped slots.
  function marks(rec, now) {
    const out = [];
    for (const r of rec.history || []) out.push({ kind: "run", fate: runFate(r), slot: ms(r.slot), from: ms(r.started_at), to: ms(r.finished_at), attempt: r.attempt, text: r.slot + ", attempt " + r.attempt + ": " + runFate(r) });
    for (const l of rec.leases || []) out.push({ kind: "run", fate: "running", slot: ms(l.slot), from: ms(l.claimed_at), to: now, attempt: l.attempt, text: l.slot + ", attempt " + l.attempt + ": running" });
    for (const d of rec.dead || []) out.push({ kind: "dot", fate: "dead", slot: ms(d.slot), from: ms(d.died_at), to: ms(d.died_at), attempt: d.attempts, text: d.slot + ": dead after " + d.attempts + " attempts" });
    for (const p of rec.pending || []) out.push({ kind: "dot", fate: !p.origin || p.origin === "schedule" ? "retrying" : "queued", slot: ms(p.slot), from: ms(p.not_before), to: ms(p.not_before), attempt: p.attempt, text: p.slot + ": attempt " + p.attempt + " not before " + p.not_before });
    for (const f of rec.fates || []) out.push({ kind: "span", fate: f.fate, slot: ms(f.first), from: ms(f.first), to: ms(f.last), attempt: 0, text: f.slots + " " + f.fate + " (" + f.reason.replace(/_/g, " ") + "): " + f.first + (f.slots > 1 ? " to " + f.last : "") });
    return out.filter((m) => isFinite(m.from) && isFinite(m.to));
  }
  // A job's recent slots on a time axis: a lane per attempt (retries
  // below the first), the spans of missed and skipped slots beneath, and
  // for each run a line from its slot's time to its start (the wait, or
  // the slot's jitter).
  function slotChart(rec, zone, now, jitter) {
    const all = marks(rec, now);
    if (!all.length) return null;
    const start = Math.min(...all.map((m) => Math.min(m.slot, m.from)));
    const span = Math.max(now - start, 60000);
    const W = 800, left = 4, lanes = Math.min(3, Math.max(1, ...all.map((m) => m.kind === "span" ? 1 : Math.min(3, m.attempt || 1))));
    const H = 26 + lanes * 22 + 26;
    const x = (t) => left + (W - 2 * left) * (t - start) / span;
    const laneY = (a) => 18 + (Math.min(3, Math.max(1, a)) - 1) * 22;
    const spanY = 20 + lanes * 22;
    const kids = [svg("line", { class: "axis", x1: left, x2: W - left, y1: H - 16, y2: H - 16 })];
    for (const m of all) {
      const cls = "f-" + m.fate;
      if (m.kind === "span") {
        kids.push(svg("rect", { class: "span " + cls, x: x(m.from), y: spanY, width: Math.max(3, x(m.to) - x(m.from)), height: 10 }, svg("title", {}, m.text)));
        continue;
      }
      const y = laneY(m.attempt);
      kids.push(svg("line", { class: "wait", x1: x(m.slot), x2: x(m.from), y1: y + 8, y2: y + 8 }));
      kids.push(svg("line", { class: "slot-tick", x1: x(m.slot), x2: x(m.slot), y1: y + 2, y2: y + 14 }));
      if (m.kind === "run") kids.push(svg("rect", { class: "run " + cls, x: x(m.from), y, width: Math.max(3, x(m.to) - x(m.from)), height: 16 }, svg("title", {}, m.text)));
      else kids.push(svg("circle", { class: "dot " + cls, cx: x(m.from), cy: y + 8, r: 6 }, svg("title", {}, m.text)));
    }
    kids.push(svg("text", { x: left, y: H - 3 }, inZone(new Date(start).toISOString(), zone)));
    kids.push(svg("text", { x: W - left, y: H - 3, "text-anchor": "end" }, "now"));
    return el("figure", { class: "chart" },
      svg("svg", { id: "slots", viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "recent slots on a time axis" }, kids),
      el("figcaption", { class: "sub" }, "Each bar is a run from its start to its end (retries below the first attempt); a tick marks its slot's time" + (jitter ? ", and the line to the bar the slot's jitter (up to " + jitter + ") and wait" : ", the line to the bar its wait") + "; dots are dead letters and waiting runs; the band beneath, missed and skipped slots."));
  }
  // A job's last day as a strip of slot fates, for the jobs list.
  const DAY = 86400000;
  function fateStrip(rec, now) {
    const x = (t) => Math.max(0, Math.min(240, 240 * (t - (now - DAY)) / DAY));
    const kids = [svg("rect", { class: "strip-bg", x: 0, y: 0, width: 240, height: 12 })];
    for (const m of marks(rec, now)) {
      if (m.to < now - DAY) continue;
      kids.push(svg("rect", { class: "fate f-" + m.fate, x: x(m.kind === "span" ? m.from : m.slot), y: 0, width: Math.max(2, m.kind === "span" ? x(m.to) - x(m.from) : 2), height: 12 }, svg("title", {}, m.text)));
    }
    return svg("svg", { class: "strip", viewBox: "0 0 240 12", width: 240, height: 12, role: "img", "aria-label": "the last 24 hours of slots" }, kids);
  }

  function counts(title, byReason, cls) {
    const chips = Object.entries(byReason || {}).filter(([, n]) => n > 0).map(([reason, n]) => el("span", {}, badge(cls), " " + reason.replace(/_/g, " ") + ": " + n));
    return chips.length ? [el("h2", {}, title), el("p", { class: "chips" }, chips)] : [];
  }

  async function jobView(name) {
    const q = encodeURIComponent(name);
    const [{ body: s }, { body: next }] = await Promise.all([
      api("GET", "/status?job=" + q),
      api("GET", "/jobs/" + q + "/next?count=10"),
    ]);
    const j = s.jobs[0];
    const now = ms(s.now);
    const path = "/jobs/" + q;
    const from = el("input", { name: "from", placeholder: "from (RFC 3339)", required: true, size: 22 });
    const to = el("input", { name: "to", placeholder: "to (RFC 3339)", required: true, size: 22 });
    const backfill = el("form", { id: "backfill", onsubmit: (e) => {
      e.preventDefault();
      act("Queue every slot of " + name + " from " + from.value + " to " + to.value + " to run again?", "POST", path + "/backfill?from=" + encodeURIComponent(from.value.trim()) + "&to=" + encodeURIComponent(to.value.trim()));
    } }, from, to, el("button", { type: "submit" }, "Backfill"));
    let lastOffset = null;
    const slots = next.slots.map((n) => {
      const marks = [];
      if (n.kind === "shifted_from_gap") marks.push("shifted: " + n.local + " does not exist (DST gap)");
      if (n.kind === "second_pass") marks.push("second pass of a repeated hour (DST)");
      if (lastOffset !== null && n.offset_seconds !== lastOffset) marks.push("UTC offset changes before this slot");
      lastOffset = n.offset_seconds;
      return el("tr", {}, cell("Slot", when(n.slot, j.timezone, now)), cell("UTC", el("code", {}, n.slot)), starts(n, j.timezone), cell("DST", marks.length ? badge("late") : "", " " + marks.join("; ")));
    });
    return [
      el("h1", {}, name, " ", badge(health(j))),
      el("p", {}, el("code", {}, j.schedule), " — " + j.explanation + ", " + j.timezone, next.dst ? el("span", { class: "sub" }, next.dst) : null),
      j.late_since ? el("p", { class: "error" }, "Late: the slot of " + inZone(j.late_since, j.timezone) + " has not been claimed.") : null,
      el("div", { class: "actions" },
        el("button", { id: "trigger", type: "button", onclick: () => act("Run the current slot of " + name + " now?", "POST", path + "/trigger") }, "Trigger now"),
        j.paused
          ? el("button", { id: "resume", type: "button", onclick: () => act("Resume " + name + "?", "POST", path + "/resume") }, "Resume")
          : el("button", { id: "pause", type: "button", class: "danger", onclick: () => act("Pause " + name + "? Its slots are skipped until it is resumed.", "POST", path + "/pause") }, "Pause"),
        j.dead_letters ? el("button", { id: "redrive-all", type: "button", onclick: () => act("Send all " + j.dead_letters + " dead letters of " + name + " back to run?", "POST", path + "/redrive") }, "Redrive all") : null,
        backfill),
      el("p", {}, "Last success: ", when(j.last_success, j.timezone, now), " · runs " + j.runs + ", succeeded " + j.succeeded + ", failed " + j.failed + ", fence " + j.fence),
      counts("Missed slots", j.missed, "missed"),
      counts("Skipped slots", j.skipped, "skipped"),
      el("h2", {}, "Recent slots"),
      slotChart(j.record, j.timezone, now, next.jitter),
      timeline(j.record, j.timezone, now),
      el("h2", {}, "Next slots"),
      el("table", { id: "next" }, el("tbody", {}, slots)),
    ];
  }

  async function dlqView() {
    const { body: d } = await api("GET", "/dlq");
    const now = ms(d.now);
    const rows = d.dead_letters.map((e) => {
      const slot = e.slot;
      // A keyed run is redriven by its key.
      const path = "/jobs/" + encodeURIComponent(e.job) + "/redrive?" + (e.key ? "key=" + encodeURIComponent(e.key) : "slot=" + encodeURIComponent(slot));
      return el("tr", { "data-slot-id": e.slot_id },
        cell("Job", e.key ? [jobLink(e.job), " / " + e.key] : jobLink(e.job)),
        cell("Slot", when(slot, "UTC", now)),
        cell("Attempts", e.attempts),
        cell("Error", e.last_error),
        cell("", el("button", { type: "button", class: "redrive", onclick: () => act("Send " + e.slot_id + " back to run?", "POST", path) }, "Redrive")));
    });
    const jobs = [...new Set(d.dead_letters.filter((e) => !e.key).map((e) => e.job))];
    return [
      el("h1", {}, "Dead letters (" + d.dead_letters.length + ")"),
      jobs.length ? el("div", { class: "actions" }, jobs.map((job) => el("button", { type: "button", onclick: () => act("Send every dead letter of " + job + " back to run?", "POST", "/jobs/" + encodeURIComponent(job) + "/redrive") }, "Redrive all of " + job))) : null,
      rows.length
        ? el("table", { id: "dlq" }, el("thead", {}, el("tr", {}, ["Job", "Slot", "Attempts", "Error", ""].map((h) => el("th", {}, h)))), el("tbody", {}, rows))
        : el("p", {}, "No dead letters."),
    ];
  }

  function fail(e) {
    if (e instanceof Unauthorized) {
      sessionStorage.removeItem(KEY);
      showLogin(e.message === "no token" ? "" : "Signed out: " + e.message);
    } else {
      notice(String(e.message || e));
    }
  }

  function showLogin(message) {
    $("login").hidden = false;
    $("logout").hidden = true;
    view.replaceChildren();
    $("login-error").textContent = message || "";
  }

  function listRoute(view, rest) {
    const [job, query] = rest.split("?");
    return view(decodeURIComponent(job), Object.fromEntries(new URLSearchParams(query || "")));
  }
  function scheduleRoute(rest) {
    const [job, key] = rest.split("/");
    return scheduleView(decodeURIComponent(job), decodeURIComponent(key || ""));
  }

  let rendering = false;
  async function render() {
    if (rendering) return;
    if (!token()) return showLogin("");
    rendering = true;
    try {
      const h = location.hash || "#/";
      const nodes = h.startsWith("#/job/") ? await jobView(decodeURIComponent(h.slice(6)))
        : h.startsWith("#/schedules/") ? await listRoute(schedulesView, h.slice(12))
        : h.startsWith("#/schedule/") ? await scheduleRoute(h.slice(11))
        : h.startsWith("#/runs/") ? await listRoute(runsView, h.slice(7))
        : h === "#/dlq" ? await dlqView()
        : await jobsView(Object.fromEntries(new URLSearchParams(h.startsWith("#/jobs?") ? h.slice(7) : "")));
      $("login").hidden = true;
      $("logout").hidden = false;
      view.replaceChildren(...nodes.flat().filter(Boolean));
      $("clock").textContent = "updated " + new Date().toLocaleTimeString();
    } catch (e) { fail(e); } finally { rendering = false; }
  }

  $("login").addEventListener("submit", (e) => {
    e.preventDefault();
    const t = $("token").value.trim();
    $("token").value = "";
    if (t) sessionStorage.setItem(KEY, t);
    notice("");
    render();
  });
  $("logout").addEventListener("click", () => { sessionStorage.removeItem(KEY); notice(""); showLogin(""); });
  window.addEventListener("hashchange", () => { notice(carried); carried = ""; render(); });
  // Refresh by itself, but never under someone typing: a re-render would
  // drop what they typed (the backfill range).
  const editing = () => [...view.querySelectorAll("input, select")].some((i) => (i.tagName === "INPUT" && i.value) || i === document.activeElement);
  setInterval(() => { if (token() && !document.hidden && !editing()) render(); }, REFRESH_MS);
  render();
})();
