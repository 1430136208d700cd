// Headless Chromium check of a built pvbench report (used by test_report.py).
//
//   node report_browser.mjs '{"reports": "/path/reports", "base": "http://127.0.0.1:8000",
//                             "pages": [{"name": "index", "path": "/"}], "outDir": "/tmp/shots"}'
//
// A page may also give "select" (an option of its first Dropdown to pick after loading) and
// "waitText" (what the page shows once the choice took effect); the result lists the options;
// and "via": the text of a link on the open page that leads to it (args.navigate 'client'),
// clicked as a reader does (the link's own href, not one made by the test); or "load": true,
// loaded afresh in a new tab even when pages are reached by following links.
// For every page: loads it, waits until the charts are drawn, measures how much of each
// ECharts canvas is painted, collects the page text, failed/outbound requests and console
// errors, and saves a full-page screenshot. Prints one JSON object on stdout (with "refetched":
// the /_app/immutable/ files whose body came over the network more than once).
// playwright-core comes from reports/node_modules (devDependency); the browser is Debian's
// /usr/bin/chromium (never `playwright install`). Outbound DNS is blocked in the browser, so an
// attempted internet fetch shows up as a failed, non-loopback request.

import { createRequire } from 'node:module';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const args = JSON.parse(process.argv[2]);
const require = createRequire(path.join(args.reports, 'package.json'));
const { chromium } = require('playwright-core');

const origin = new URL(args.base).origin;
mkdirSync(args.outDir, { recursive: true });

// a profile of its own, with a disk cache, as a user's browser has: what the server lets it keep
// (the hashed /_app/immutable/ files) is fetched once, not on every page
const profile = mkdtempSync(path.join(tmpdir(), 'pvbench-browser-'));
const context = await chromium.launchPersistentContext(profile, {
	executablePath: args.chromium ?? '/usr/bin/chromium',
	// every host but the site's own (127.0.0.1, or e.g. argo-server's pod address) is unreachable
	args: [`--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1 , EXCLUDE ${new URL(args.base).hostname}`, '--no-sandbox'],
	viewport: { width: 1440, height: 900 },
	// args.insecure: a server with a self-signed certificate (argo-server in the CI cluster)
	ignoreHTTPSErrors: Boolean(args.insecure)
});
const requests = [];
const transfers = {}; // URL -> how many times its body came over the network (not from the cache)
const failed = [];
const bad = [];
context.on('request', (r) => requests.push(r.url()));
context.on('requestfailed', (r) => failed.push({ url: r.url(), error: r.failure()?.errorText }));
context.on('response', (r) => r.status() >= 400 && bad.push({ url: r.url(), status: r.status() }));
context.on('requestfinished', async (r) => {
	const sizes = await r.sizes().catch(() => undefined);
	if ((sizes?.responseBodySize ?? 0) > 0) transfers[r.url()] = (transfers[r.url()] ?? 0) + 1;
});

/** Painted share of every ECharts canvas on the page (0 = blank). */
async function chartStats(page) {
	return page.evaluate(() => {
		const out = [];
		for (const el of document.querySelectorAll('[_echarts_instance_]')) {
			const canvas = el.querySelector('canvas');
			const svg = el.querySelector('svg');
			const box = el.getBoundingClientRect();
			const entry = { width: Math.round(box.width), height: Math.round(box.height) };
			if (canvas) {
				const ctx = canvas.getContext('2d');
				const { data } = ctx.getImageData(0, 0, canvas.width, canvas.height);
				let painted = 0;
				const colours = new Set();
				for (let i = 0; i < data.length; i += 4) {
					const [r, g, b, a] = [data[i], data[i + 1], data[i + 2], data[i + 3]];
					if (a > 0 && !(r > 245 && g > 245 && b > 245)) {
						painted++;
						if (colours.size < 64) colours.add(`${r >> 4},${g >> 4},${b >> 4}`);
					}
				}
				entry.kind = 'canvas';
				entry.painted = painted / (data.length / 4);
				entry.colours = colours.size;
			} else if (svg) {
				entry.kind = 'svg';
				entry.svgElements = svg.querySelectorAll('path, rect, circle, text').length;
			}
			// ECharts paints titles into the canvas; the pages repeat title, unit and n in the
			// chart's aria-label (ECharts' aria option) for screen readers, and for this check
			entry.label = el.getAttribute('aria-label') ?? '';
			out.push(entry);
		}
		return out;
	});
}

/**
 * Pick `select` in the page's first Dropdown (an Evidence input: the page's queries then run
 * again in the browser's DuckDB) and wait until the page shows `waitText`. The options listed.
 */
async function choose(page, select, waitText) {
	await page.locator('button[role="combobox"]').first().click();
	const opts = page.getByRole('option');
	await opts.first().waitFor({ timeout: 30_000 });
	const options = await opts.allInnerTexts(); // the shown ones: a long list is virtual
	// type it into the Dropdown's search box (a long list shows only a few options at a time)
	const search = page.locator('input[data-cmdk-input]');
	if (await search.count()) await search.first().fill(select);
	await opts.filter({ hasText: select }).first().click({ timeout: 30_000 });
	await page.keyboard.press('Escape');
	if (waitText) {
		await page.waitForFunction((t) => document.body.innerText.includes(t), waitText, { timeout: 60_000 });
	}
	await page.waitForTimeout(1500); // the rest of the page's queries and tables
	return options;
}

/**
 * The open tab, when pages are reached by following links (args.navigate === 'client'): a
 * report's every page loads DuckDB's WebAssembly and ~7 MB of JavaScript, which a click on a
 * link in the sidebar does not load again (SvelteKit routes it in the page). The first page, and
 * a page at the open one's path, are loaded afresh.
 */
let tab;
let tabErrors;

async function openPage(url) {
	const page = await context.newPage();
	const consoleErrors = [];
	page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text().slice(0, 500)));
	page.on('pageerror', (e) => consoleErrors.push(`pageerror: ${e.message.slice(0, 500)}`));
	const res = await page.goto(url, { waitUntil: 'networkidle', timeout: 120_000 });
	return { page, consoleErrors, status: res?.status() ?? 0 };
}

/** Reach `url` as a click on a link to it would, in the open tab; its status from the server. */
async function follow(url) {
	const page = tab;
	tabErrors.length = 0; // the earlier page's errors were its own
	await page.evaluate((href) => {
		const a = document.createElement('a');
		a.href = href;
		document.body.append(a);
		a.click();
		a.remove();
	}, url);
	await page.waitForURL(url, { timeout: 120_000 });
	await page.waitForLoadState('networkidle', { timeout: 120_000 });
	const res = await context.request.get(url); // what the server says of the page itself
	return { page, consoleErrors: tabErrors, status: res.status() };
}

/** Click the link named `via` (its whole text) on the open tab; it must lead to `url`. */
async function click(url, via) {
	const page = tab;
	tabErrors.length = 0;
	await page.getByRole('link', { name: via, exact: true }).first().click({ timeout: 30_000 });
	await page.waitForURL(url, { timeout: 120_000 });
	await page.waitForLoadState('networkidle', { timeout: 120_000 });
	const res = await context.request.get(url);
	return { page, consoleErrors: tabErrors, status: res.status() };
}

/** Load one page, wait for its charts, screenshot it; its text, charts and errors. */
async function visit(name, p, minCharts, select, waitText, via, load) {
	const started = Date.now();
	const url = origin + p;
	let loaded;
	if (args.navigate === 'client' && tab && via) {
		loaded = await click(url, via);
	} else if (args.navigate === 'client' && tab && !load && new URL(tab.url()).pathname !== new URL(url).pathname) {
		loaded = await follow(url);
	} else {
		if (tab) await tab.close();
		loaded = await openPage(url);
		if (args.navigate === 'client') [tab, tabErrors] = [loaded.page, loaded.consoleErrors];
	}
	const { page, consoleErrors, status } = loaded;
	// charts are drawn after load (ECharts animations, browser-side DuckDB for inputs)
	const deadline = Date.now() + (args.waitMs ?? 30_000);
	let charts = [];
	while (Date.now() < deadline) {
		await page.waitForTimeout(1000);
		charts = await chartStats(page);
		const drawn = charts.filter((c) => (c.painted ?? 0) > 0.005 || (c.svgElements ?? 0) > 5);
		if (charts.length >= minCharts && drawn.length === charts.length) break;
	}
	const options = select ? await choose(page, select, waitText) : undefined;
	// let the last chart animation settle before the screenshot (pages without charts: just a moment)
	await page.waitForTimeout(charts.length ? 1500 : 300);
	charts = await chartStats(page);
	const screenshot = path.join(args.outDir, `${name}.png`);
	await page.screenshot({ path: screenshot, fullPage: true });
	await page.screenshot({ path: path.join(args.outDir, `${name}-top.png`) }); // first screen, full size
	const result = {
		name,
		url,
		status,
		title: await page.title(),
		text: await page.evaluate(() => document.body.innerText),
		charts,
		consoleErrors: [...consoleErrors],
		options,
		screenshot,
		ms: Date.now() - started
	};
	if (page !== tab) await page.close();
	return result;
}

const results = [];
const NETWORK_CHANGED = 'ERR_NETWORK_CHANGED';
for (const { name, path: p, minCharts = 0, select, waitText, via, load } of args.pages) {
	let [badBefore, failedBefore] = [bad.length, failed.length];
	let result = await visit(name, p, minCharts, select, waitText, via, load);
	// Chromium aborts in-flight requests when the host's network configuration changes (another
	// process adding an address or a bridge: the Kubernetes stage beside, bringing its node up or
	// down, does so several times in a row): that is the machine, not the report. Load it again.
	const brokenByTheMachine = () =>
		result.consoleErrors.some((e) => e.includes(NETWORK_CHANGED)) ||
		failed.slice(failedBefore).some((f) => (f.error ?? '').includes(NETWORK_CHANGED));
	for (let again = 0; again < 4 && brokenByTheMachine(); again++) {
		const first = result.consoleErrors;
		await new Promise((done) => setTimeout(done, 2000)); // let the change settle
		// The broken attempt's error responses are its own, not the site's: SvelteKit's error
		// path after an aborted request runs the root layout's load for the route without its
		// params, whose prerendered queries (/api/<route>/<md5 of no params>/…) do not exist: a 404.
		const voided = bad.splice(badBefore);
		[badBefore, failedBefore] = [bad.length, failed.length];
		result = await visit(name, p, minCharts, select, waitText, undefined, load); // not clicked to, again
		result.retriedAfter = first;
		result.voidedResponses = voided;
	}
	results.push(result);
}
if (tab) await tab.close();
await context.close();
rmSync(profile, { recursive: true, force: true });

// a cacheable file whose body came twice: the server's caching headers did not work
const refetched = Object.entries(transfers)
	.filter(([u, n]) => n > 1 && new URL(u).pathname.startsWith('/_app/immutable/'))
	.map(([u]) => u);
const external = requests.filter(
	(u) => !u.startsWith(origin) && !u.startsWith('data:') && !u.startsWith('blob:')
);
console.log(JSON.stringify({ pages: results, requests, external, failed, bad, refetched }));
