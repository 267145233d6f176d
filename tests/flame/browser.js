// browser.js: drives Debian's headless Chromium through playwright-core (tests/node_modules)
// on flame graphs that csampler drew, as a user would: hover, click, search, keys, reload.
//
//   node browser.js test FLAME.svg LAYOUT.txt DIFF.svg SCREENSHOT.png [NEGATED-DIFF.svg
//                   [GPU.svg BOTH.svg GPU-SCREENSHOT.png [PYTHON.svg [DEEP.svg DEEP-INVERTED.svg]]]]
//       the checks of t-browser.sh; prints "PASS: browser/..." or "FAIL: browser/...: why"
//       GPU.svg and BOTH.svg are `csampler flame --gpu` and `--both` of gpu-writer's "flame"
//       mode (see t-browser.sh and tests/progs/gpu-writer.c for its figures).
//       LAYOUT.txt is `csampler flame --dump-layout` of the same input: the frames' geometry
//       computed in C, which the rectangles flame.js draws must match.
//   node browser.js bench FLAME.svg [SCREENSHOT.png]
//       for scripts/bench-flame.sh: prints JSON {open_ms, zoom_ms, rects_open, rects_zoom}
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require(path.join(__dirname, '..', 'node_modules', 'playwright-core'));

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
// As root Chromium needs --no-sandbox; nothing may reach the network.
const ARGS = ['--no-sandbox', '--headless', '--disable-gpu', '--disable-background-networking',
	'--disable-component-update', '--disable-sync', '--no-first-run',
	'--disable-default-apps', '--disable-extensions'];

let failures = 0;
function pass(name) { console.log(`PASS: browser/${name}`); }
function fail(name, why) { console.log(`FAIL: browser/${name}: ${why}`); failures++; }
function check(name, ok, why) { ok ? pass(name) : fail(name, why); }

async function launch() {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'csampler-chromium-'));
	const ctx = await chromium.launchPersistentContext(dir, {
		executablePath: CHROMIUM, headless: true, args: ARGS,
		viewport: { width: 1240, height: 420 },
	});
	return { ctx, dir };
}

async function close(b) {
	await b.ctx.close();
	fs.rmSync(b.dir, { recursive: true, force: true });
}

function fileUrl(p) { return 'file://' + path.resolve(p); }

// Frame `name`'s rectangle (its first frame in pre-order): center in page coordinates, and
// its x and width attributes.
async function frameBox(page, name) {
	return page.evaluate((n) => {
		const f = window.csamplerFlame, i = f.frameOf(n), r = i >= 0 && f.rectOf(i);
		if (!r)
			return null;
		const b = r.getBoundingClientRect();
		return { x: b.x + b.width / 2, y: b.y + b.height / 2, width: +r.getAttribute('width'),
			left: +r.getAttribute('x') };
	}, name);
}

async function text(page, sel) {
	return (await page.textContent(sel)).trim();
}

async function testFlame(page, svg, layoutFile) {
	const errors = [];
	page.on('pageerror', (e) => errors.push(e.message));
	let alerts = 0, answer = null;
	page.on('dialog', async (d) => {
		if (d.type() === 'prompt' && answer !== null) {
			await d.accept(answer);
			answer = null;
		} else {
			if (d.type() === 'alert')
				alerts++;
			await d.dismiss();
		}
	});
	const url = fileUrl(svg);
	await page.goto(url);
	await page.waitForFunction(() => window.csamplerFlame !== undefined, null, { timeout: 10000 });

	// Drawn, without errors, the JS geometry equal to the C layout.
	const rects = await page.$$eval('#frames rect', (rs) => rs.map((r) =>
		[+r.getAttribute('x'), +r.getAttribute('width'), +r.getAttribute('y')]));
	const layout = fs.readFileSync(layoutFile, 'utf8').split('\n')
		.filter((l) => l && l[0] !== '#').map((l) => l.split(' '));
	check('draws-every-frame', rects.length === layout.length,
		`${rects.length} rectangles, the layout has ${layout.length} frames`);
	let mismatch = null;
	layout.forEach((f, i) => {
		const r = rects[i];
		if (!r || Math.abs(r[0] - +f[1]) > 0.011 || Math.abs(r[1] - +f[2]) > 0.011 ||
		    Math.abs(r[2] - +f[3]) > 0.5)
			mismatch = mismatch || `frame ${i} (${f.slice(6).join(' ')}): browser ${r} vs C ${f.slice(1, 4)}`;
	});
	check('geometry-matches-layout', !mismatch, mismatch);

	// A hostile name stays text: no new script element, no alert, the name shown as is.
	const scripts = await page.$$eval('script', (s) => s.length);
	const hostile = await page.$$eval('#frames text', (ts) => ts.map((t) => t.textContent)
		.filter((s) => s.startsWith('<script>')));
	check('hostile-name-is-text', scripts === 2 && alerts === 0 && hostile.length === 1,
		`${scripts} script elements, ${alerts} alerts, labels ${JSON.stringify(hostile)}`);

	// Hover: details line and tooltip.
	let foo = await frameBox(page, 'foo');
	await page.mouse.move(foo.x, foo.y);
	let details = await text(page, '#details');
	check('hover-details', details === 'Function: foo (50 samples, 50.00%)', `details: "${details}"`);
	let tip = await text(page, '#tip');
	const tipShown = await page.$eval('#tip', (t) => !t.classList.contains('hide'));
	check('hover-tooltip', tipShown && tip.includes('50 samples') && tip.includes('50.00% of total') &&
		tip.includes('50.00% of zoom'), `tooltip (${tipShown ? 'shown' : 'hidden'}): "${tip}"`);

	// Click: zoom into foo; its child bar doubles in width, ancestors greyed.
	const barBefore = (await frameBox(page, 'bar')).width;
	await page.mouse.click(foo.x, foo.y);
	const barAfter = (await frameBox(page, 'bar')).width;
	check('click-zooms', Math.abs(barBefore - 354) < 0.01 && Math.abs(barAfter - 708) < 0.01,
		`bar width ${barBefore} -> ${barAfter}, expected 354 -> 708`);
	const greyed = await page.$$eval('#frames rect.anc', (rs) => rs.length);
	const unzoomShown = await page.$eval('#unzoom', (t) => !t.classList.contains('hide'));
	check('zoom-greys-ancestors', greyed === 2 && unzoomShown,
		`${greyed} greyed ancestors (expected 2: all, main), Reset Zoom ${unzoomShown ? 'shown' : 'hidden'}`);
	const bar = await frameBox(page, 'bar');
	await page.mouse.move(bar.x, bar.y);
	details = await text(page, '#details');
	check('zoom-percent', details === 'Function: bar (30 samples, 30.00%, 60.00% of zoom)',
		`details: "${details}"`);

	// The zoom is in the URL and survives a reload.
	let hash = await page.evaluate(() => location.hash);
	await page.reload();
	await page.waitForFunction(() => window.csamplerFlame !== undefined);
	const barReload = (await frameBox(page, 'bar')).width;
	check('zoom-in-url', /z=\d+/.test(hash) && Math.abs(barReload - 708) < 0.01,
		`hash "${hash}", bar width after reload ${barReload}`);

	// Reset Zoom.
	await page.click('#unzoom');
	const barReset = (await frameBox(page, 'bar')).width;
	hash = await page.evaluate(() => location.hash);
	check('reset-zoom', Math.abs(barReset - 354) < 0.01 && hash === '',
		`bar width ${barReset}, hash "${hash}"`);

	// Search button: foo (50, with its bar nested: counted once) + qux;bar (10) = 60%.
	answer = 'foo|bar';
	await page.click('#search');
	let matched = await text(page, '#matched');
	const magenta = await page.$$eval('#frames rect', (rs) =>
		rs.filter((r) => r.getAttribute('fill') === 'rgb(230,0,230)').length);
	check('search-matched', matched === 'Matched: 60.0%' && magenta === 3,
		`"${matched}" with ${magenta} highlighted frames, expected "Matched: 60.0%" and 3 (foo, bar, bar)`);
	hash = await page.evaluate(() => location.hash);
	check('search-in-url', hash.includes('s=foo%7Cbar'), `hash "${hash}"`);

	// Search within a zoom counts within it: qux holds only bar.
	const qux = await frameBox(page, 'qux');
	await page.mouse.click(qux.x, qux.y);
	matched = await text(page, '#matched');
	check('search-within-zoom', matched === 'Matched: 100.0%', `"${matched}"`);

	// Esc resets zoom and search.
	await page.keyboard.press('Escape');
	matched = await text(page, '#matched');
	hash = await page.evaluate(() => location.hash);
	const barEsc = (await frameBox(page, 'bar')).width;
	check('escape-resets', matched === '' && hash === '' && Math.abs(barEsc - 354) < 0.01,
		`matched "${matched}", hash "${hash}", bar width ${barEsc}`);

	// Case: "FOO" matches nothing until the ic toggle.
	answer = 'FOO';
	await page.keyboard.press('Control+f');
	const caseSensitive = await text(page, '#matched');
	await page.click('#ignorecase');
	const caseInsensitive = await text(page, '#matched');
	hash = await page.evaluate(() => location.hash);
	check('ignore-case-toggle', caseSensitive === 'Matched: 0.0%' &&
		caseInsensitive === 'Matched: 50.0%' && hash.includes('i=1'),
		`"${caseSensitive}" then "${caseInsensitive}", hash "${hash}"`);
	await page.keyboard.press('Control+i');
	await page.keyboard.press('Escape');

	// Ctrl-F, then step through the matches with n / N.
	answer = '^ba';
	await page.keyboard.press('Control+f');
	matched = await text(page, '#matched');
	await page.keyboard.press('n');
	const step1 = await text(page, '#matched');
	const cur1 = await page.$$eval('#frames rect.cur', (rs) => rs.length);
	const det1 = await text(page, '#details');
	await page.keyboard.press('n');
	const det2 = await text(page, '#details');
	await page.keyboard.press('Shift+N');
	const det3 = await text(page, '#details');
	check('ctrl-f-and-step', matched === 'Matched: 60.0%' && step1 === 'Matched: 60.0% (1 of 3)' &&
		cur1 === 1 && det1.startsWith('Function: bar (30') && det2.startsWith('Function: baz') &&
		det3 === det1, `"${matched}", "${step1}", ${cur1} current, "${det1}", "${det2}", "${det3}"`);

	// Screenshot with a search and a tooltip showing.
	foo = await frameBox(page, 'foo');
	await page.mouse.move(foo.x, foo.y);
	check('no-page-errors', errors.length === 0, errors.join('; '));
}

async function testDiff(page, svg) {
	const errors = [];
	page.on('pageerror', (e) => errors.push(e.message));
	await page.goto(fileUrl(svg));
	await page.waitForFunction(() => window.csamplerFlame !== undefined);
	// BEFORE: a 20 b 80 (of 100); AFTER: a 60 b 140 (of 200): a grew from 20% to 30%.
	const a = await frameBox(page, 'a');
	await page.mouse.move(a.x, a.y);
	const details = await text(page, '#details');
	const tip = await text(page, '#tip');
	const fills = await page.$$eval('#frames rect', (rs) => {
		const d = JSON.parse(document.getElementById('flamedata').textContent);
		const out = {};
		rs.forEach((r) => { out[d.names[d.frames[3 * r.fi + 1]]] = r.getAttribute('fill'); });
		return out;
	});
	check('diff-details', details === 'Function: a (60 samples, 30.00%; +10.00%)', `"${details}"`);
	check('diff-tooltip', tip.includes('before: 20 samples (20.00%)') &&
		tip.includes('after: 60 (30.00%)') && tip.includes('+10.00 points'), `"${tip}"`);
	check('diff-colours', /^rgb\(255,/.test(fills.a) && /,255\)$/.test(fills.b) &&
		fills.main === 'rgb(255,255,255)', JSON.stringify(fills));
	check('diff-no-page-errors', errors.length === 0, errors.join('; '));
}

// --negate swaps the colours: a (grew) is blue, b (shrank) red.
async function testNegate(page, svg) {
	await page.goto(fileUrl(svg));
	await page.waitForFunction(() => window.csamplerFlame !== undefined);
	const fills = await page.$$eval('#frames rect', (rs) => {
		const d = JSON.parse(document.getElementById('flamedata').textContent);
		const out = {};
		rs.forEach((r) => { out[d.names[d.frames[3 * r.fi + 1]]] = r.getAttribute('fill'); });
		return out;
	});
	check('diff-negate', /,255\)$/.test(fills.a) && /^rgb\(255,/.test(fills.b), JSON.stringify(fills));
}

// GPU graphs: GPU frames in colours of their own, with times and calls in the tooltip (and
// with --both their share of the GPU root); zoom and search work on them. gpu-writer's GPU
// time: 4 x 50 us forward, 3 x 30 us reduce, 3 x 7 us scan, a 2 us copy, 0.5 us memset, 5 us
// sync: 318.5 us, 311 us of it in kernels.
async function testGpu(page, svg, bothSvg, shot) {
	const errors = [];
	page.on('pageerror', (e) => errors.push(e.message));
	let answer = null;
	page.on('dialog', async (d) => {
		if (d.type() === 'prompt' && answer !== null) {
			await d.accept(answer);
			answer = null;
		} else {
			await d.dismiss();
		}
	});
	await page.goto(fileUrl(svg));
	await page.waitForFunction(() => window.csamplerFlame !== undefined);
	// Fills by kind: GPU kernels, copies, syncs (5, 6, 7) against CPU code (1, 2, 3, 4, 8).
	const fills = await page.$$eval('#frames rect', (rs) => {
		const d = JSON.parse(document.getElementById('flamedata').textContent);
		const out = { gpu: [], cpu: [], kernel: [] };
		rs.forEach((r) => {
			const kind = d.kinds[d.frames[3 * r.fi + 1]] & 0xff, f = r.getAttribute('fill');
			if (kind >= 5 && kind <= 7)
				out.gpu.push(f);
			if (kind === 5)
				out.kernel.push(f);
			if ((kind >= 1 && kind <= 4) || kind === 8)
				out.cpu.push(f);
		});
		return out;
	});
	const shared = fills.gpu.filter((f) => fills.cpu.includes(f));
	const purple = fills.kernel.every((f) => {
		const m = /rgb\((\d+),(\d+),(\d+)\)/.exec(f);
		return m && +m[1] >= 190 && +m[3] >= 190 && +m[2] <= 140;
	});
	check('gpu-colours', fills.kernel.length === 3 && fills.gpu.length === 6 && fills.cpu.length > 5 &&
		!shared.length && purple, `${fills.kernel.length} kernel, ${fills.gpu.length} GPU, ` +
		`${fills.cpu.length} CPU frames; shared fills ${JSON.stringify(shared)}; kernels ${JSON.stringify(fills.kernel)}`);
	const legend = await page.$$eval('#legend text', (ts) => ts.map((t) => t.textContent));
	check('gpu-legend', ['GPU kernels', 'GPU copies', 'GPU synchronisation', 'NVTX ranges', 'own code']
		.every((k) => legend.includes(k)), JSON.stringify(legend));

	// Hover a kernel: 4 launches of 50 us each, all of the forward range's GPU time.
	const name = '[gpu] render_forward(float*, int)';
	let k = await frameBox(page, name);
	await page.mouse.move(k.x, k.y);
	const details = await text(page, '#details');
	const tip = await text(page, '#tip');
	const total = await page.evaluate(() => JSON.parse(document.getElementById('flamedata').textContent).total);
	const share = (100 * 200000 / 318500).toFixed(2);
	check('gpu-hover', total === 318500 && details === `Function: ${name} (200.000 \u00b5s, 4 calls, ${share}%)` &&
		tip.includes(`200.000 \u00b5s \u00b7 4 calls \u00b7 ${share}% of total`) &&
		tip.includes('GPU kernels'), `details "${details}", tooltip "${tip}" (total ${total} ns)`);

	// Zoom into the NVTX range "forward": its only kernel fills the width.
	const range = await frameBox(page, '[nvtx] forward');
	await page.mouse.click(range.x, range.y);
	k = await frameBox(page, name);
	check('gpu-zoom', Math.abs(k.width - 1180) < 0.01, `kernel width ${k.width} after zooming into the range`);
	await page.click('#unzoom');

	// Search the GPU kernels: their share of the whole graph.
	answer = '^\\[gpu\\]';
	await page.click('#search');
	const matched = await text(page, '#matched');
	const want = (100 * 311000 / 318500).toFixed(1);
	const magenta = await page.$$eval('#frames rect', (rs) =>
		rs.filter((r) => r.getAttribute('fill') === 'rgb(230,0,230)').length);
	check('gpu-search', matched === `Matched: ${want}%` && magenta === 3,
		`"${matched}" with ${magenta} highlighted, expected "Matched: ${want}%" and 3 kernels`);
	const templ = await page.$$eval('#frames text', (ts) => ts.map((t) => t.textContent)
		.filter((s) => s.includes('reduce<')));
	check('gpu-template-name-is-text', templ.length >= 1, `labels ${JSON.stringify(templ)}`);
	await page.keyboard.press('Escape');
	k = await frameBox(page, name);
	await page.mouse.move(k.x, k.y);
	if (shot)
		await page.screenshot({ path: shot });

	// --both: the GPU root holds the GPU time; a kernel's tooltip gives its share of it.
	await page.goto(fileUrl(bothSvg));
	await page.waitForFunction(() => window.csamplerFlame !== undefined);
	const roots = await page.evaluate(() => {
		const f = window.csamplerFlame, d = JSON.parse(document.getElementById('flamedata').textContent);
		const g = f.frameOf('GPU'), c = f.frameOf('CPU');
		f.zoom(g); /* the CPU time dwarfs this GPU time */
		return { gpu: d.frames[3 * g + 2], cpu: d.frames[3 * c + 2], total: d.total, both: d.both };
	});
	/* The CPU stacks' depth varies from run to run: the GPU frames at the bottom of the
	 * graph may be below the viewport. */
	await page.evaluate((n) => {
		const f = window.csamplerFlame;
		f.rectOf(f.frameOf(n)).scrollIntoView({ block: 'center' });
	}, name);
	k = await frameBox(page, name);
	await page.mouse.move(k.x, k.y);
	const btip = await text(page, '#tip');
	check('gpu-both', roots.both === 1 && roots.gpu === 318500 && roots.cpu + roots.gpu === roots.total &&
		btip.includes(`${share}% of GPU time`) && btip.includes('4 calls'),
		`roots ${JSON.stringify(roots)}, tooltip "${btip}"`);
	check('gpu-no-page-errors', errors.length === 0, errors.join('; '));
}

// Python frames (py-spy's "function (file.py:LINE)", or frames csampler read from CPython):
// orange, in fills no native frame has, and "Python" in the legend.
async function testPython(page, svg) {
	await page.goto(fileUrl(svg));
	await page.waitForFunction(() => window.csamplerFlame !== undefined);
	const fills = await page.$$eval('#frames rect', (rs) => {
		const d = JSON.parse(document.getElementById('flamedata').textContent);
		const out = { py: [], native: [] };
		rs.forEach((r) => {
			const kind = d.kinds[d.frames[3 * r.fi + 1]] & 0xff, f = r.getAttribute('fill');
			if (kind === 10)
				out.py.push(f);
			else if (kind >= 1 && kind <= 8)
				out.native.push(f);
		});
		return out;
	});
	const shared = fills.py.filter((f) => fills.native.includes(f));
	const orange = fills.py.every((f) => {
		const m = /rgb\((\d+),(\d+),(\d+)\)/.exec(f);
		return m && +m[1] >= 190 && +m[2] >= 90 && +m[2] <= 155 && +m[3] === 0;
	});
	check('python-colours', fills.py.length === 5 && fills.native.length >= 5 && !shared.length && orange,
		`${fills.py.length} Python, ${fills.native.length} native frames; shared fills ` +
		`${JSON.stringify(shared)}; Python fills ${JSON.stringify(fills.py)}`);
	const legend = await page.$$eval('#legend text', (ts) => ts.map((t) => t.textContent));
	check('python-legend', legend.includes('Python'), JSON.stringify(legend));
}

// A graph made 4,523 px tall by one rare sample 276 frames deep: it opens on its root and its
// widest frames (scrolled to the bottom), the details line below them; a short graph and an
// icicle (--inverted, root at the top) open unscrolled.
async function testDeep(page, deepSvg, invertedSvg, shortSvg, deepShot) {
	const visible = (names) => page.evaluate((ns) => {
		const f = window.csamplerFlame, out = {};
		for (const n of ns) {
			const i = f.frameOf(n), r = i >= 0 && f.rectOf(i);
			const b = r && r.getBoundingClientRect();
			out[n] = !!b && b.top >= 0 && b.bottom <= window.innerHeight;
		}
		const dy = +document.getElementById('details').getAttribute('y') - window.scrollY;
		out.details = dy >= 0 && dy <= window.innerHeight;
		const s = document.getElementById('search').getBoundingClientRect();
		out.search = s.height > 0 && s.top >= 0 && s.bottom <= window.innerHeight;
		out.scrollY = window.scrollY;
		out.height = document.documentElement.getBoundingClientRect().height;
		return out;
	}, names);
	const open = async (svg) => {
		await page.goto(fileUrl(svg));
		await page.waitForFunction(() => window.csamplerFlame !== undefined, null, { timeout: 10000 });
	};
	const wide = ['python3', 'main', 'train', 'step', 'load', 'eval'];
	await open(deepSvg);
	let v = await visible(wide);
	check('deep-graph-is-tall', v.height > 4000, `the graph is ${v.height} px tall, not the 4,523 px case`);
	const hidden = wide.filter((n) => !v[n]);
	check('deep-opens-on-root', hidden.length === 0 && v.details && v.scrollY > 0,
	      `not on the first screen: ${hidden.join(', ') || (v.details ? '' : 'the details line')}` +
	      ` (scrollY ${v.scrollY})`);
	check('deep-buttons-on-screen', v.search, `the Search button is off the first screen`);
	if (deepShot)
		await page.screenshot({ path: deepShot });
	const box = await frameBox(page, 'train');
	await page.mouse.click(box.x, box.y);
	const zoomed = await page.evaluate(() => window.csamplerFlame.state.zoom);
	await page.click('#unzoom');
	const z = await page.evaluate(() => window.csamplerFlame.state.zoom);
	check('deep-zoom-and-reset-scrolled', zoomed > 0 && z === 0,
	      `clicking train zoomed to ${zoomed}; Reset Zoom left zoom ${z}`);
	await page.evaluate(() => window.scrollTo(0, 0));
	await page.reload();
	await page.waitForFunction(() => window.csamplerFlame !== undefined, null, { timeout: 10000 });
	v = await visible(wide);
	check('deep-reload-opens-on-root', wide.every((n) => v[n]), `after a reload: ${JSON.stringify(v)}`);
	await open(invertedSvg);
	v = await visible(wide);
	check('deep-inverted-opens-at-top', v.scrollY === 0 && wide.every((n) => v[n]),
	      `icicle: ${JSON.stringify(v)}`);
	await open(shortSvg);
	v = await visible(['main']);
	check('short-graph-not-scrolled', v.scrollY === 0 && v.main, `short graph: ${JSON.stringify(v)}`);
}

async function test(svg, layout, diffSvg, shot, negSvg, gpuSvg, bothSvg, gpuShot, pySvg, deepSvg,
		    deepInvertedSvg) {
	const b = await launch();
	try {
		const page = await b.ctx.newPage();
		await testFlame(page, svg, layout);
		await page.screenshot({ path: shot });
		check('screenshot', fs.statSync(shot).size > 5000, `${shot} is too small`);
		const page2 = await b.ctx.newPage();
		await testDiff(page2, diffSvg);
		if (negSvg)
			await testNegate(page2, negSvg);
		if (gpuSvg) {
			const page3 = await b.ctx.newPage();
			await testGpu(page3, gpuSvg, bothSvg, gpuShot);
		}
		if (pySvg)
			await testPython(await b.ctx.newPage(), pySvg);
		if (deepSvg)
			await testDeep(await b.ctx.newPage(), deepSvg, deepInvertedSvg, svg,
				       shot.replace(/\.png$/, '-deep.png'));
	} catch (e) {
		fail('driver', e.message.split('\n')[0]);
	} finally {
		await close(b);
	}
}

// Open the SVG and zoom into a frame, timing both in the page.
async function bench(svg, shot) {
	const b = await launch();
	try {
		const page = await b.ctx.newPage();
		const t0 = Date.now();
		await page.goto(fileUrl(svg), { waitUntil: 'load' });
		await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
		const openMs = Date.now() - t0;
		const rectsOpen = await page.$$eval('#frames rect', (rs) => rs.length);
		const z = await page.evaluate(() => new Promise((resolve) => {
			const d = JSON.parse(document.getElementById('flamedata').textContent);
			// The widest frame holding at most half of the samples: a typical first click.
			let best = -1, bestCount = -1;
			for (let i = 1; 3 * i < d.frames.length; i++)
				if (d.frames[3 * i + 2] <= d.total / 2 && d.frames[3 * i + 2] > bestCount) {
					best = i;
					bestCount = d.frames[3 * i + 2];
				}
			const t = performance.now();
			window.csamplerFlame.zoom(best);
			requestAnimationFrame(() => requestAnimationFrame(() =>
				resolve(performance.now() - t)));
		}));
		const rectsZoom = await page.$$eval('#frames rect', (rs) => rs.length);
		if (shot)
			await page.screenshot({ path: shot });
		console.log(JSON.stringify({ open_ms: openMs, zoom_ms: Math.round(z), rects_open: rectsOpen,
			rects_zoom: rectsZoom }));
	} finally {
		await close(b);
	}
}

const [mode, ...args] = process.argv.slice(2);
(mode === 'bench' ? bench(args[0], args[1]) : test(...args)).then(() => process.exit(failures ? 1 : 0),
	(e) => { console.log(`FAIL: browser/driver: ${e.message.split('\n')[0]}`); process.exit(1); });
