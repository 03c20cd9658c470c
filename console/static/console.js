// console.js: live refresh of the actorlog console. Every few seconds it
// fetches the page's JSON endpoint (body[data-api]) and updates:
//   [data-t="field"]            the text of one value
//   [data-show="field"]         shown while the value is truthy
//   table[data-rows="field"]    rows rebuilt from an array, one cell per
//                               th[data-f] (th[data-href]: a link to
//                               href + the value); table[data-warn="a|!b"]
//                               marks rows where any of them holds
//   svg[data-spark="field"]     a sparkline of the value (data-rate: its
//                               rate per second), latest in #data-label
//   [data-fmt="bytes"|"rate"]   (on [data-t] and th) the value as a size
//                               or a rate; [data-partial="field"] adds
//                               "(partial)" while that field is true
//   th[data-spark]              the cell draws the array value (a rate
//                               history) as a sparkline
// and asks for confirmation on form[data-confirm]. Values are written
// with textContent only, never as HTML.
(function () {
  "use strict";

  document.querySelectorAll("form[data-confirm]").forEach(function (f) {
    f.addEventListener("submit", function (e) {
      if (!window.confirm(f.getAttribute("data-confirm"))) e.preventDefault();
    });
  });

  var api = document.body.getAttribute("data-api");
  if (!api) return;
  var PERIOD = 5000, SAMPLES = 60;
  var series = {};
  var live = document.getElementById("live");

  function get(o, path) {
    return path.split(".").reduce(function (x, k) { return x == null ? null : x[k]; }, o);
  }
  function text(v) {
    if (v === null || v === undefined || v === "") return "-";
    if (Array.isArray(v)) return v.length ? v.join(",") : "-";
    if (v === true) return "yes";
    if (v === false) return "no";
    return String(v);
  }
  function human(n) {
    if (n < 1024) return n + " B";
    var units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"], u = 0;
    for (n /= 1024; n >= 1024 && u < units.length - 1; n /= 1024) u++;
    return n.toFixed(1) + " " + units[u];
  }
  function format(v, kind, partial) {
    if (typeof v !== "number") return text(v);
    if (kind === "bytes") return human(v) + (partial ? " (partial)" : "");
    if (kind === "rate") return v.toFixed(1);
    return text(v);
  }
  function points(pts) {
    var w = 240, h = 40, top = Math.max.apply(null, pts.concat([1]));
    return pts.map(function (p, i) {
      var x = pts.length < 2 ? w : i * w / (pts.length - 1);
      return x.toFixed(1) + "," + (h - 2 - p / top * (h - 4)).toFixed(1);
    }).join(" ");
  }
  function sparkCell(td, pts) {
    var ns = "http://www.w3.org/2000/svg";
    var svg = document.createElementNS(ns, "svg"), line = document.createElementNS(ns, "polyline");
    svg.setAttribute("class", "spark");
    svg.setAttribute("viewBox", "0 0 240 40");
    line.setAttribute("points", Array.isArray(pts) && pts.length ? points(pts) : "");
    svg.appendChild(line);
    td.appendChild(svg);
  }
  function holds(spec, row) {
    return spec.split("|").some(function (s) {
      var neg = s.charAt(0) === "!";
      var v = get(row, neg ? s.slice(1) : s);
      return neg ? !v : !!v;
    });
  }
  function table(tbl, data) {
    var rows = get(data, tbl.getAttribute("data-rows"));
    if (!Array.isArray(rows)) return;
    var cols = Array.prototype.map.call(tbl.querySelectorAll("thead th"), function (th) {
      return { f: th.getAttribute("data-f"), href: th.getAttribute("data-href"), fmt: th.getAttribute("data-fmt"),
        partial: th.getAttribute("data-partial"), spark: th.hasAttribute("data-spark") };
    });
    var warn = tbl.getAttribute("data-warn");
    var body = document.createElement("tbody");
    rows.forEach(function (row) {
      var tr = document.createElement("tr");
      if (warn && holds(warn, row)) tr.className = "warn";
      cols.forEach(function (c) {
        var td = document.createElement("td");
        var v = c.f ? get(row, c.f) : null;
        if (c.href && v !== null && v !== undefined) {
          var a = document.createElement("a");
          a.href = c.href + encodeURIComponent(String(v));
          a.textContent = text(v);
          td.appendChild(a);
        } else if (c.spark) {
          sparkCell(td, v);
        } else {
          td.textContent = format(v, c.fmt, c.partial && get(row, c.partial));
        }
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    var old = tbl.querySelector("tbody");
    if (old) tbl.replaceChild(body, old); else tbl.appendChild(body);
  }
  function spark(svg, data, now) {
    var f = svg.getAttribute("data-spark"), v = get(data, f);
    if (typeof v !== "number") return;
    var s = series[f] || (series[f] = []);
    s.push({ t: now, v: v });
    if (s.length > SAMPLES + 1) s.shift();
    var pts = s.map(function (p) { return p.v; });
    if (svg.hasAttribute("data-rate")) {
      pts = [];
      for (var i = 1; i < s.length; i++) {
        var dt = (s[i].t - s[i - 1].t) / 1000;
        pts.push(dt > 0 ? Math.max(0, (s[i].v - s[i - 1].v) / dt) : 0);
      }
    }
    if (!pts.length) return;
    svg.querySelector("polyline").setAttribute("points", points(pts));
    var label = document.getElementById(svg.getAttribute("data-label") || "");
    if (label) label.textContent = String(Math.round(pts[pts.length - 1] * 10) / 10);
  }
  function apply(data) {
    var now = Date.now();
    document.querySelectorAll("[data-t]").forEach(function (el) {
      var p = el.getAttribute("data-partial");
      el.textContent = format(get(data, el.getAttribute("data-t")), el.getAttribute("data-fmt"), p && get(data, p));
    });
    document.querySelectorAll("[data-show]").forEach(function (el) { el.hidden = !get(data, el.getAttribute("data-show")); });
    document.querySelectorAll("table[data-rows]").forEach(function (t) { table(t, data); });
    document.querySelectorAll("svg[data-spark]").forEach(function (s) { spark(s, data, now); });
    if (live) live.textContent = "live · " + new Date(now).toLocaleTimeString();
  }
  function refresh() {
    fetch(api, { headers: { Accept: "application/json" }, cache: "no-store", credentials: "same-origin" })
      .then(function (r) {
        return r.json().then(function (body) {
          if (!r.ok) throw new Error(body && body.error ? body.error : "HTTP " + r.status);
          return body;
        });
      })
      .then(apply)
      .catch(function (e) { if (live) live.textContent = "refresh failed: " + e.message; });
  }
  refresh();
  setInterval(refresh, PERIOD);
})();
