// speedscope.js: imports a `csampler export --format chrome` trace into speedscope (npm, under
// tests/node_modules) in Debian's headless Chromium, as a user would: its own index.html from
// a file, the trace through its file input. Checks that it loads with one profile per track,
// every thread and stream name listed, no frame left unpaired by the importer, and the names
// of kernels, API calls and sampled functions in its sandwich (function table) view.
// Given a `csampler export --format speedscope` file instead, checks it loads with every
// thread's profile and the names given in NAMES (comma-separated) in its function table.
//   node speedscope.js TRACE.json SCREENSHOT.png [NAMES]   prints PASS:/FAIL: lines
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const modules = path.join(__dirname, '..', 'node_modules');
const { chromium } = require(path.join(modules, 'playwright-core'));

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--headless', '--disable-gpu', '--disable-background-networking',
	'--disable-component-update', '--disable-sync', '--no-first-run', '--disable-extensions'];
let failures = 0;
function check(name, ok, why) {
	if (ok)
		console.log(`PASS: export/speedscope/${name}`);
	else {
		console.log(`FAIL: export/speedscope/${name}: ${why}`);
		failures++;
	}
}

// Open speedscope's index.html in headless Chromium, load file through its file input, and
// run fn(page, errors, warnings); the browser is closed afterwards.
async function withSpeedscope(file, fn) {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'csampler-chromium-'));
	const ctx = await chromium.launchPersistentContext(dir, { executablePath: CHROMIUM,
		headless: true, args: ARGS, viewport: { width: 1400, height: 800 } });
	try {
		const page = await ctx.newPage();
		const warnings = [], errors = [];
		page.on('console', (m) => warnings.push(m.text()));
		page.on('pageerror', (e) => errors.push(e.message));
		await page.goto('file://' + path.join(modules, 'speedscope', 'dist', 'release', 'index.html'));
		await page.setInputFiles('#file', file);
		await fn(page, errors, warnings);
	} finally {
		await ctx.close();
		fs.rmSync(dir, { recursive: true, force: true });
	}
}

// Search the sandwich (function table) view for a name; true when a row starts with it.
async function findInTable(page, name) {
	await page.keyboard.press('Control+f');
	// Type only once the search box has the focus: keys typed before it opens are speedscope's
	// view shortcuts, and the search then misses a name that is there.
	await page.waitForFunction(() => document.activeElement &&
		document.activeElement.tagName === 'INPUT', null, { timeout: 5000 }).catch(() => {});
	await page.keyboard.press('Control+a');
	await page.keyboard.type(name);
	// The table filters after the typing settles, later on a loaded machine: poll for up to
	// 5 s (a fixed 300 ms wait missed names that were there, in a different one each run).
	let rows = 0;
	for (let tries = 0; tries < 25 && rows === 0; tries++) {
		await page.waitForTimeout(200);
		rows = await page.$$eval('td, span, div', (els, n) =>
			els.filter((el) => el.children.length === 0 && el.textContent.startsWith(n)).length, name);
	}
	await page.keyboard.press('Escape');
	return rows > 0;
}

// A `csampler export --format speedscope` file: it loads with one profile per thread, every
// profile listed under its name ("comm tid"), and each name in want (comma-separated, from the
// command line) found in the first thread's function table.
async function checkSpeedscopeFile(file, want, shot) {
	const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
	const n = doc.profiles.length;
	await withSpeedscope(file, async (page, errors) => {
		const count = `(1/${n})`;
		let loaded = true;
		await page.waitForSelector(`text=${count}`, { timeout: 30000 }).catch(() => { loaded = false; });
		const body = await page.textContent('body');
		check('file/loads', loaded && errors.length === 0,
			`no '${count}' profile counter (${n} profiles): ${errors.join('; ')} ${body.slice(0, 200)}`);
		if (!loaded)
			return;
		const missing = doc.profiles.map((p) => p.name).filter((name) => !body.includes(name));
		check('file/thread-names', missing.length === 0, `profiles not listed: ${missing.join(', ')}`);
		await page.click('text=Sandwich');
		await page.waitForTimeout(1000); // the table renders late on a loaded machine
		check('file/search-can-fail', !(await findInTable(page, 'no_such_function_in_the_profile')),
			'the table search found a name that is not in the profile');
		for (const name of want)
			check(`file/${name}`, await findInTable(page, name), `'${name}' not in the sandwich table`);
		await page.keyboard.press('1');
		if (shot)
			await page.screenshot({ path: shot });
	});
}

async function main() {
	const [tracePath, shot, want] = process.argv.slice(2);
	const trace = JSON.parse(fs.readFileSync(tracePath, 'utf8'));
	if (trace.$schema && trace.$schema.includes('speedscope'))
		return checkSpeedscopeFile(tracePath, (want || '').split(',').filter((x) => x), shot);
	const ev = trace.traceEvents;
	const names = new Map();
	for (const e of ev)
		if (e.ph === 'M' && e.name === 'thread_name')
			names.set(`${e.pid}/${e.tid}`, e.args.name);
	const tracks = new Set(ev.filter((e) => 'BEX'.includes(e.ph)).map((e) => `${e.pid}/${e.tid}`));
	const mainKey = [...tracks].find((k) => k.split('/')[0] === k.split('/')[1] &&
		ev.some((e) => `${e.pid}/${e.tid}` === k &&
			(e.cat === 'cuda_runtime' || e.cat === 'cuda_driver')));
	const cpuNames = [...new Set(ev.filter((e) => e.ph === 'B' && e.cat === 'cpu' &&
		`${e.pid}/${e.tid}` === mainKey).map((e) => e.name))];

	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'csampler-chromium-'));
	const ctx = await chromium.launchPersistentContext(dir, { executablePath: CHROMIUM,
		headless: true, args: ARGS, viewport: { width: 1400, height: 800 } });
	try {
		const page = await ctx.newPage();
		const warnings = [], errors = [];
		page.on('console', (m) => warnings.push(m.text()));
		page.on('pageerror', (e) => errors.push(e.message));
		await page.goto('file://' + path.join(modules, 'speedscope', 'dist', 'release', 'index.html'));
		await page.setInputFiles('#file', tracePath);
		const count = `(1/${tracks.size})`;
		let loaded = true;
		await page.waitForSelector(`text=${count}`, { timeout: 30000 }).catch(() => { loaded = false; });
		const body = await page.textContent('body');
		check('loads', loaded && errors.length === 0,
			`no '${count}' profile counter (${tracks.size} tracks): ${errors.join('; ')} ${body.slice(0, 200)}`);
		if (!loaded)
			return;
		const missing = [...tracks].filter((k) => !body.includes(`${names.get(k)} (tid ${k.split('/')[1]})`));
		check('thread-names', names.size > 0 && missing.length === 0,
			`profiles not listed under their thread names: ${missing.join(', ')}`);
		const bad = warnings.filter((w) => /Doing nothing|still open at end|stack was empty/.test(w));
		check('nesting', bad.length === 0, `${bad.length} import warnings, e.g. ${bad.slice(0, 2).join(' | ')}`);

		// The main thread's function table: API calls, sync waits, sampled functions.
		await page.click('text=Sandwich');
		await page.click(`text=${count}`);
		await page.click(`text=${names.get(mainKey)} (tid ${mainKey.split('/')[1]})`);
		const find = (name) => findInTable(page, name);
		check('search-can-fail', !(await find('no_such_function_in_the_trace')),
			'the table search found a name that is not in the trace');
		for (const name of ['cuLaunchKernel', 'Stream Synchronize', 'train'])  // the driver call the library records
			check(`main-thread/${name}`, await find(name), `'${name}' not in the sandwich table`);
		const seen = [];
		for (const name of cpuNames.slice(0, 5))
			if (await find(name))
				seen.push(name);
		check('main-thread/sampled-functions', cpuNames.length > 0 && seen.length === Math.min(5, cpuNames.length),
			`of ${cpuNames.slice(0, 5).join(', ')} found ${seen.join(', ')}`);

		const stream = [...tracks].find((k) => names.get(k) === 'stream 1');
		await page.click(`text=${names.get(mainKey)} (tid ${mainKey.split('/')[1]})`);
		await page.click(`text=stream 1 (tid ${stream.split('/')[1]})`);
		check('stream-1/forward_kernel', await find('forward_kernel(float*, int)'),
			"'forward_kernel(float*, int)' not in stream 1's table");
		await page.keyboard.press('1'); // back to the time-ordered view for the screenshot
		if (shot)
			await page.screenshot({ path: shot });
	} finally {
		await ctx.close();
		fs.rmSync(dir, { recursive: true, force: true });
	}
}

main().then(() => process.exit(failures ? 1 : 0),
	(e) => { console.log(`FAIL: export/speedscope/run: ${e.message.split('\n')[0]}`); process.exit(1); });
