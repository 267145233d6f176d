/* flame.js: draws and drives a csampler flame graph. flame_svg.c embeds it in every SVG,
 * after the script element #flamedata, which holds the frames as JSON:
 *   frames: [depth, name index, count, ...] in pre-order (a frame's children follow it, left
 *           to right); before: the BEFORE count per frame (differential graphs);
 *   names, kinds (flame_kind | 0x100 inlined), mods/modn (module), src (file:line) per name;
 *   calls: GPU activities merged into each frame (GPU views of data files only); with
 *          callsname "idle_ns" (--gpu-idle), the GPU idle ns the frame's samples explain;
 *   countname "ns": counts are nanoseconds (the GPU views), shown as times; both: the graph
 *   has a CPU and a GPU root, and tooltips give a frame's share of its root too;
 *   W, H, fh, fs, fw, xpad, ypad1, ypad2, legendY: the geometry flame_layout.c computed.
 * Only frames wide enough to see are turned into elements, at each zoom, so big profiles
 * stay fast. Names are only ever set as text (textContent), never parsed as markup.
 * State (zoom, search, case) lives in the URL fragment: #z=FRAME&s=REGEX&i=1. */
"use strict";
(function () {
	var NS = "http://www.w3.org/2000/svg";
	var doc = document;
	var svg = doc.documentElement;
	var $ = function (id) { return doc.getElementById(id); };
	var D = JSON.parse($("flamedata").textContent);
	var F = D.frames, N = F.length / 3;
	var depth = new Uint32Array(N), key = new Uint32Array(N), cnt = new Float64Array(N);
	var x0 = new Float64Array(N), end = new Uint32Array(N), parent = new Int32Array(N);
	var bef = D.diff ? D.before : null;
	var calls = D.calls || null;
	var isTime = D.countname === "ns";
	var names = D.names, kinds = D.kinds;
	var charW = D.fs * D.fw;
	var KIND = ["all", "own code", "system libraries", "kernel", "CUDA runtime and driver",
		"GPU kernels", "GPU copies", "GPU synchronisation", "JIT", "merged narrow frames", "Python",
		"NVTX ranges", "off-CPU (blocked, sleeping)"];
	var KIND_PALETTE = ["hot", "hot", "system", "aqua", "green", "purple", "pink", "grey",
		"yellow", "lightgrey", "orange", "tan", "io"];

	/* Pre-order -> positions in counts: x0 (left edge), end (one past the subtree). */
	(function () {
		var open = [], next = [0];
		for (var i = 0; i < N; i++) {
			var d = F[3 * i];
			depth[i] = d;
			key[i] = F[3 * i + 1];
			cnt[i] = F[3 * i + 2];
			while (open.length > d)
				end[open.pop()] = i;
			parent[i] = d > 0 ? open[d - 1] : -1;
			x0[i] = next[d] || 0;
			next[d] = x0[i] + cnt[i];
			next[d + 1] = x0[i];
			open.push(i);
		}
		while (open.length)
			end[open.pop()] = N;
	})();

	var state = { zoom: 0, term: "", ic: false, re: null, cur: -1 };
	var matchKey = null;       /* per name: 1 when the search matches it */
	var matches = [];          /* matched frames drawn in the current view, left to right */
	var rectOf = {};           /* frame index -> its rect, for the current view */
	var framesG = $("frames"), details = $("details"), matchedT = $("matched");
	var tip = $("tip"), tipRect = tip.firstChild, tipText = tip.lastChild;
	var shownFrame = -1;

	/* ---- colours ---- */
	function hash3(s) {
		var h1 = 2166136261, h2 = 5381;
		for (var i = 0; i < s.length; i++) {
			var c = s.charCodeAt(i);
			h1 = Math.imul(h1 ^ c, 16777619);
			h2 = (Math.imul(h2, 33) + c) | 0;
		}
		h1 >>>= 0;
		h2 >>>= 0;
		return [(h1 % 1000) / 1000, (h2 % 1000) / 1000, ((h1 >>> 10) % 1000) / 1000];
	}
	function rgb(r, g, b) {
		return "rgb(" + Math.round(r) + "," + Math.round(g) + "," + Math.round(b) + ")";
	}
	function paletteColor(p, v) {
		var a = v[0], b = v[1], c = v[2];
		switch (p) {
		case "hot": return rgb(205 + 50 * c, 230 * a, 55 * b);
		case "mem": return rgb(0, 190 + 50 * b, 210 * a);
		case "io": return rgb(80 + 60 * a, 80 + 60 * a, 190 + 55 * b);
		case "red": return rgb(200 + 55 * a, 50 + 80 * a, 50 + 80 * a);
		case "green": return rgb(50 + 60 * a, 200 + 55 * a, 50 + 60 * a);
		case "blue": return rgb(80 + 60 * a, 80 + 60 * a, 205 + 50 * a);
		case "aqua": return rgb(50 + 60 * a, 165 + 55 * a, 165 + 55 * a);
		case "yellow": return rgb(175 + 55 * a, 175 + 55 * a, 50 + 20 * a);
		case "purple": return rgb(190 + 65 * a, 80 + 60 * a, 190 + 65 * a);
		case "orange": return rgb(190 + 65 * a, 90 + 65 * a, 0);
		case "system": return rgb(110 + 50 * a, 145 + 50 * a, 215 + 40 * b);
		case "pink": return rgb(235 + 20 * a, 140 + 50 * a, 185 + 40 * b);
		case "grey": return rgb(150 + 50 * a, 150 + 50 * a, 150 + 50 * a);
		case "lightgrey": return rgb(208, 208, 208);
		case "tan": return rgb(170 + 40 * a, 140 + 30 * a, 90 + 30 * b);
		}
		return rgb(205 + 50 * c, 230 * a, 55 * b);
	}
	function lighten(col, f) {
		var m = /(\d+),(\d+),(\d+)/.exec(col);
		return rgb(+m[1] + (255 - m[1]) * f, +m[2] + (255 - m[2]) * f, +m[3] + (255 - m[3]) * f);
	}
	function greyed(col) {
		var m = /(\d+),(\d+),(\d+)/.exec(col);
		var l = 0.3 * m[1] + 0.59 * m[2] + 0.11 * m[3];
		l = 150 + l * 0.35;
		return rgb(l, l, l);
	}
	/* Differential: the change of a frame's share of its profile's total. */
	function share(i) { return cnt[i] / D.total; }
	function shareBefore(i) { return D.totalBefore > 0 ? bef[i] / D.totalBefore : 0; }
	var maxDelta = 0.01; /* a 1-point change or more is drawn at full strength */
	if (bef)
		for (var i = 1; i < N; i++)
			maxDelta = Math.max(maxDelta, Math.abs(share(i) - shareBefore(i)));
	function diffColor(i) {
		var d = share(i) - shareBefore(i);
		if (D.negate)
			d = -d;
		if (Math.abs(d) < 1e-12)
			return "rgb(255,255,255)";
		var v = Math.min(1, Math.abs(d) / maxDelta), o = 255 - 200 * v;
		return d > 0 ? rgb(255, o, o) : rgb(o, o, 255);
	}
	var colorCache = {};
	function frameColor(i) {
		if (bef)
			return diffColor(i);
		var k = key[i], kind = kinds[k] & 0xff;
		if (D.random)
			return paletteColor(D.palette === "type" ? KIND_PALETTE[kind] : D.palette,
				hash3(names[k] + "#" + i));
		var c = colorCache[k];
		if (c)
			return c;
		var p = D.palette === "type" ? KIND_PALETTE[kind] : D.palette;
		c = paletteColor(kind === 9 ? "lightgrey" : p, hash3(names[k]));
		if (kinds[k] & 0x100)
			c = lighten(c, 0.35);
		return (colorCache[k] = c);
	}

	/* ---- text helpers ---- */
	function fmtCount(c) {
		var s = Number.isInteger(c) ? String(c) : c.toFixed(2);
		var parts = s.split(".");
		parts[0] = parts[0].replace(/\B(?=(\d{3})+(?!\d))/g, ",");
		return parts.join(".");
	}
	function pct(a, b) { return b > 0 ? (100 * a / b).toFixed(2) : "0.00"; }
	/* A count with its unit: "50 samples", or for nanoseconds "1.250 ms". */
	function fmtValue(c) {
		if (!isTime)
			return fmtCount(c) + " " + D.countname;
		var a = Math.abs(c);
		if (a >= 1e9)
			return (c / 1e9).toFixed(3) + " s";
		if (a >= 1e6)
			return (c / 1e6).toFixed(3) + " ms";
		if (a >= 1e3)
			return (c / 1e3).toFixed(3) + " \u00b5s";
		return fmtCount(c) + " ns";
	}
	function fmtCalls(i) {
		if (calls && calls[i] > 0 && D.callsname === "idle_ns")
			return (calls[i] / 1e6).toFixed(3) + " ms of GPU idle time";
		return calls && calls[i] > 0 ? fmtCount(calls[i]) + (calls[i] === 1 ? " call" : " calls") : "";
	}
	/* With a CPU and a GPU root: the root (depth 1) frame i is under, else -1. */
	function topOf(i) {
		if (!D.both || depth[i] < 1)
			return -1;
		while (depth[i] > 1)
			i = parent[i];
		return i;
	}
	function fit(name, w) {
		var n = Math.floor((w - 6) / charW);
		if (n < 3)
			return "";
		return name.length <= n ? name : name.slice(0, n - 1) + "\u2026";
	}
	function el(tag, attrs, parentEl) {
		var e = doc.createElementNS(NS, tag);
		for (var a in attrs)
			e.setAttribute(a, attrs[a]);
		if (parentEl)
			parentEl.appendChild(e);
		return e;
	}
	function setText(e, s) { e.textContent = s; }

	/* ---- drawing ---- */
	function frameY(d) {
		return D.inverted ? D.ypad1 + d * D.fh : D.H - D.ypad2 - (d + 1) * D.fh + 1;
	}
	function drawFrame(frag, i, x, w, anc) {
		var y = frameY(depth[i]), k = key[i], col = frameColor(i), cls = "";
		var isMatch = matchKey && matchKey[k] && !anc;
		if (anc) {
			col = greyed(col);
			cls = "anc";
		}
		if (kinds[k] & 0x100)
			cls += " inl";
		if (isMatch)
			col = "rgb(230,0,230)";
		var r = el("rect", { x: x.toFixed(2), y: y, width: w.toFixed(2), height: D.fh - 1,
			fill: col }, frag);
		if (cls)
			r.setAttribute("class", cls);
		r.fi = i;
		rectOf[i] = r;
		if (isMatch)
			matches.push(i);
		var label = fit(names[k], w);
		if (label) {
			var t = el("text", { x: (x + 3).toFixed(2), y: y + D.fh / 2 + D.fs / 3 }, frag);
			if (cls)
				t.setAttribute("class", cls);
			t.textContent = label;
		}
	}
	function render() {
		var z = state.zoom, avail = D.W - 2 * D.xpad, scale = avail / cnt[z];
		var minDraw = Math.min(D.minpx, 0.1), frag = doc.createDocumentFragment();
		rectOf = {};
		matches = [];
		for (var a = parent[z]; a >= 0; a = parent[a])
			drawFrame(frag, a, D.xpad, avail, true);
		for (var i = z, e = end[z]; i < e;) {
			var w = cnt[i] * scale;
			if (w < minDraw) {
				i = end[i]; /* its children are narrower still */
				continue;
			}
			drawFrame(frag, i, D.xpad + (x0[i] - x0[z]) * scale, w, false);
			i++;
		}
		while (framesG.firstChild)
			framesG.removeChild(framesG.firstChild);
		framesG.appendChild(frag);
		$("unzoom").setAttribute("class", z ? "button" : "button hide");
		if (state.cur >= 0 && rectOf[state.cur])
			rectOf[state.cur].classList.add("cur");
		else
			state.cur = -1;
		updateMatched();
	}

	/* ---- details line and tooltip ---- */
	function selfCount(i) {
		var s = cnt[i];
		for (var j = i + 1; j < end[i]; j = end[j])
			s -= cnt[j];
		return Math.max(0, s);
	}
	function describe(i) {
		var k = key[i], name = names[k], z = state.zoom, nc = fmtCalls(i);
		var s = D.nametype + " " + name + " (" + fmtValue(cnt[i]) + (nc ? ", " + nc : "") +
			", " + pct(cnt[i], D.total) + "%";
		if (z)
			s += ", " + pct(cnt[i], cnt[z]) + "% of zoom";
		if (bef) {
			var d = 100 * (share(i) - shareBefore(i));
			s += "; " + (d > 0 ? "+" : "") + d.toFixed(2) + "%";
		}
		return s + ")";
	}
	function tipLines(i) {
		var k = key[i], kind = kinds[k] & 0xff, z = state.zoom, nc = fmtCalls(i), top = topOf(i);
		var lines = [[names[k].length > 160 ? names[k].slice(0, 159) + "\u2026" : names[k], "head"]];
		lines.push([fmtValue(cnt[i]) + (nc ? " \u00b7 " + nc : "") + " \u00b7 " +
			pct(cnt[i], D.total) + "% of total \u00b7 " + pct(cnt[i], cnt[z]) + "% of zoom"]);
		if (top > 0 && top !== i)
			lines.push([pct(cnt[i], cnt[top]) + "% of " + names[key[top]] + " time"]);
		var self = selfCount(i);
		if (self > 0 && i !== 0)
			lines.push(["self: " + fmtValue(self) + " (" + pct(self, D.total) + "%)"]);
		if (bef) {
			var d = 100 * (share(i) - shareBefore(i));
			lines.push(["before: " + fmtValue(bef[i]) + " (" +
				pct(bef[i], D.totalBefore) + "%) \u2192 after: " + (isTime ? fmtValue(cnt[i]) : fmtCount(cnt[i])) + " (" +
				pct(cnt[i], D.total) + "%)"]);
			lines.push(["change: " + (d > 0 ? "+" : "") + d.toFixed(2) +
				" points of the total" + (bef[i] > 0 ? " (" + (cnt[i] / D.total * D.totalBefore /
				bef[i] * 100 - 100 > 0 ? "+" : "") + (cnt[i] / D.total * D.totalBefore / bef[i] *
				100 - 100).toFixed(1) + "% after scaling)" : " (new)"),
				(d > 0) !== !!D.negate ? "grew" : "shrank"]);
		}
		var what = kind === 9 ? "frames narrower than the minimum width, merged" :
			kind === 0 ? "" : KIND[kind];
		if (kinds[k] & 0x100)
			what += (what ? ", " : "") + "inlined";
		if (D.mods && D.mods[k])
			what = D.modn[D.mods[k]] + (what ? " \u00b7 " + what : "");
		if (what)
			lines.push([what]);
		if (D.src && D.src[k])
			lines.push([D.src[k]]);
		return lines;
	}
	function svgPoint(ev) {
		var p = svg.createSVGPoint(), m = svg.getScreenCTM();
		p.x = ev.clientX;
		p.y = ev.clientY;
		return m ? p.matrixTransform(m.inverse()) : p;
	}
	function showTip(i, ev) {
		if (shownFrame !== i) {
			shownFrame = i;
			while (tipText.firstChild)
				tipText.removeChild(tipText.firstChild);
			tipLines(i).forEach(function (l, n) {
				var t = el("tspan", { x: 6, dy: n ? "1.25em" : "1.05em" }, tipText);
				if (l[1])
					t.setAttribute("class", l[1]);
				t.textContent = l[0];
			});
			tip.setAttribute("class", "");
			var bb = tipText.getBBox();
			tipRect.setAttribute("width", bb.width + 12);
			tipRect.setAttribute("height", bb.height + 8);
		}
		var p = svgPoint(ev), w = +tipRect.getAttribute("width"), h = +tipRect.getAttribute("height");
		var x = p.x + 14, y = p.y + 16;
		if (x + w > D.W - 2)
			x = Math.max(2, p.x - w - 8);
		if (y + h > D.H - 2)
			y = Math.max(2, p.y - h - 8);
		tip.setAttribute("transform", "translate(" + x.toFixed(1) + "," + y.toFixed(1) + ")");
	}
	function hideTip() {
		shownFrame = -1;
		tip.setAttribute("class", "hide");
	}

	/* ---- zoom ---- */
	function zoom(i) {
		state.zoom = i > 0 && i < N ? i : 0;
		hideTip();
		render();
		saveState();
	}

	/* ---- search ---- */
	function compile() {
		state.re = null;
		matchKey = null;
		if (!state.term)
			return true;
		try {
			state.re = new RegExp(state.term, state.ic ? "i" : "");
		} catch (e) {
			return false;
		}
		matchKey = new Uint8Array(names.length);
		for (var k = 1; k < names.length; k++)
			matchKey[k] = state.re.test(names[k]) ? 1 : 0;
		return true;
	}
	/* Matched share of the zoomed frame, each sample counted once: a match's own
	 * matching descendants are skipped. */
	function matchedShare() {
		var z = state.zoom, sum = 0;
		for (var i = z, e = end[z]; i < e;) {
			if (matchKey[key[i]]) {
				sum += cnt[i];
				i = end[i];
			} else {
				i++;
			}
		}
		return sum / cnt[z];
	}
	function updateMatched() {
		var s = $("search");
		if (!state.term) {
			setText(matchedT, " ");
			setText(s, "Search");
			return;
		}
		setText(s, "Reset Search");
		if (!matchKey) {
			setText(matchedT, "Invalid regex: " + state.term);
			return;
		}
		var t = "Matched: " + (100 * matchedShare()).toFixed(1) + "%";
		if (state.cur >= 0)
			t += " (" + (matches.indexOf(state.cur) + 1) + " of " + matches.length + ")";
		setText(matchedT, t);
	}
	function search(term) {
		state.term = term || "";
		state.cur = -1;
		var ok = compile();
		if (!ok)
			matchKey = null;
		render();
		saveState();
	}
	function searchPrompt() {
		if (state.term) {
			search("");
			return;
		}
		var t = window.prompt("Search for a frame (a regular expression" +
			(state.ic ? ", ignoring case" : "") + "):", "");
		if (t !== null && t !== "")
			search(t);
	}
	function toggleCase() {
		state.ic = !state.ic;
		$("ignorecase").setAttribute("class", state.ic ? "button on" : "button");
		if (state.term)
			search(state.term);
		else
			saveState();
	}
	function step(dir) {
		if (!matches.length)
			return;
		if (state.cur >= 0 && rectOf[state.cur])
			rectOf[state.cur].classList.remove("cur");
		var n = matches.indexOf(state.cur);
		n = n < 0 ? (dir > 0 ? 0 : matches.length - 1) : (n + dir + matches.length) % matches.length;
		state.cur = matches[n];
		rectOf[state.cur].classList.add("cur");
		setText(details, describe(state.cur));
		updateMatched();
		if (rectOf[state.cur].scrollIntoView)
			rectOf[state.cur].scrollIntoView({ block: "nearest", inline: "nearest" });
	}

	/* ---- URL state ---- */
	function saveState() {
		var p = [];
		if (state.zoom)
			p.push("z=" + state.zoom);
		if (state.term)
			p.push("s=" + encodeURIComponent(state.term));
		if (state.ic)
			p.push("i=1");
		var h = p.length ? "#" + p.join("&") : "";
		try {
			history.replaceState(null, "", location.href.split("#")[0] + h);
		} catch (e) {
			/* Some viewers forbid it: the state is simply not kept. */
		}
	}
	function loadState() {
		var h = location.hash.replace(/^#/, "");
		h.split("&").forEach(function (kv) {
			var m = /^([a-z])=(.*)$/.exec(kv);
			if (!m)
				return;
			var v = decodeURIComponent(m[2]);
			if (m[1] === "z" && /^\d+$/.test(v) && +v < N)
				state.zoom = +v;
			else if (m[1] === "s")
				state.term = v;
			else if (m[1] === "i")
				state.ic = v === "1";
		});
		$("ignorecase").setAttribute("class", state.ic ? "button on" : "button");
		if (!compile())
			matchKey = null;
	}

	/* ---- legend ---- */
	function legend() {
		var g = $("legend"), x = D.xpad, y = D.legendY, items = [];
		if (!y)
			return;
		if (bef) {
			var grew = D.negate ? "shrank" : "grew", shrank = D.negate ? "grew" : "shrank";
			items.push([rgb(255, 55, 55), grew], [rgb(255, 160, 160), grew + " a little"],
				["rgb(255,255,255)", "unchanged"], [rgb(160, 160, 255), shrank + " a little"],
				[rgb(55, 55, 255), shrank]);
			items.push([null, "(change in share of the total; widths: AFTER)"]);
		} else {
			var seen = [], inl = false;
			for (var k = 1; k < kinds.length; k++) {
				seen[kinds[k] & 0xff] = true;
				inl = inl || (kinds[k] & 0x100) !== 0;
			}
			for (var kind = 1; kind < KIND.length; kind++)
				if (seen[kind])
					items.push([paletteColor(KIND_PALETTE[kind], [0.5, 0.5, 0.5]), KIND[kind]]);
			if (inl)
				items.push([lighten(paletteColor("hot", [0.5, 0.5, 0.5]), 0.35),
					"inlined (italic, dashed)", "inl"]);
		}
		items.forEach(function (it) {
			if (it[0]) {
				var r = el("rect", { x: x, y: y - D.fs * 0.8, width: D.fs, height: D.fs * 0.8,
					fill: it[0] }, g);
				if (it[2])
					r.setAttribute("class", it[2]);
				x += D.fs + 4;
			}
			var t = el("text", { x: x, y: y }, g);
			t.textContent = it[1];
			x += t.getComputedTextLength() + 14;
		});
	}

	/* ---- events ---- */
	framesG.addEventListener("mouseover", function (ev) {
		var i = ev.target.fi;
		if (i === undefined)
			return;
		setText(details, describe(i));
		showTip(i, ev);
	});
	framesG.addEventListener("mousemove", function (ev) {
		if (ev.target.fi !== undefined)
			showTip(ev.target.fi, ev);
	});
	framesG.addEventListener("mouseout", function () {
		setText(details, " ");
		hideTip();
	});
	framesG.addEventListener("click", function (ev) {
		var i = ev.target.fi;
		if (i !== undefined && i !== state.zoom)
			zoom(i);
	});
	$("unzoom").addEventListener("click", function () { zoom(0); });
	$("search").addEventListener("click", searchPrompt);
	$("ignorecase").addEventListener("click", toggleCase);
	window.addEventListener("keydown", function (ev) {
		var ctrl = ev.ctrlKey || ev.metaKey;
		if ((ctrl && (ev.key === "f" || ev.key === "F")) || ev.key === "F3" ||
		    (ev.key === "/" && !ctrl)) {
			ev.preventDefault();
			if (state.term && ev.key === "F3")
				step(ev.shiftKey ? -1 : 1);
			else
				searchPrompt();
		} else if (ctrl && (ev.key === "i" || ev.key === "I")) {
			ev.preventDefault();
			toggleCase();
		} else if (ev.key === "Escape") {
			state.term = "";
			state.cur = -1;
			compile();
			zoom(0);
		} else if (!ctrl && (ev.key === "n" || ev.key === "Enter")) {
			step(ev.shiftKey ? -1 : 1);
		} else if (!ctrl && ev.key === "N") {
			step(-1);
		}
	});

	if (bef)
		framesG.setAttribute("class", "diff");
	var nojs = $("nojs");
	nojs.parentNode.removeChild(nojs);
	/* A rare deep stack (Python's start-up imports, 276 frames) can make a flame graph far
	 * taller than the window, with the root and the widest frames at its bottom: open on them,
	 * with the details line below. An icicle (--inverted) has its root at the top already. */
	function showRoot() {
		var root = rectOf[0];
		if (D.inverted || !root || !window.scrollTo)
			return;
		/* a reload too (zoom and search come back from the URL), not the old scroll */
		if (window.history && "scrollRestoration" in window.history)
			window.history.scrollRestoration = "manual";
		var over = root.getBoundingClientRect().bottom + D.ypad2 - window.innerHeight;
		if (over > 0)
			window.scrollTo(window.scrollX, window.scrollY + over);
	}

	/* The title row (title, legend, Reset Zoom, Search) follows the page down, so that a graph
	 * scrolled to its root keeps its buttons on screen. */
	var pinned = ["title", "subtitle", "legend", "unzoom", "search", "ignorecase"];
	function pinControls() {
		var dy = Math.max(0, window.scrollY || 0);
		pinned.forEach(function (id) {
			var e = $(id);
			if (e)
				e.setAttribute("transform", dy ? "translate(0," + dy + ")" : "");
		});
	}
	window.addEventListener("scroll", pinControls);

	loadState();
	legend();
	render();
	showRoot();
	pinControls();
	/* For tests and scripts: the frame list and a few operations. */
	window.csamplerFlame = {
		frames: N, zoom: zoom, search: search, step: step,
		frameOf: function (name) {
			for (var i = 0; i < N; i++)
				if (names[key[i]] === name)
					return i;
			return -1;
		},
		rectOf: function (i) { return rectOf[i] || null; },
		state: state,
	};
})();
