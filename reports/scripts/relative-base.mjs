#!/usr/bin/env node
// pvbench: a built report works under any path prefix (postinstall step, idempotent).
//
// Why: the same static site is opened from the web root (`pvbench report serve`), from the Argo
// UI's artifact view (/artifact-files/<ns>/workflows/<wf>/<node>/outputs/report/…), from an S3
// static website (…/analytics/campaign=x/report/index.html) and from an ingress sub-path: a
// prefix no build can know. Evidence only has a build-time prefix (deployment.basePath); with
// none, every URL it writes is root-absolute (/_app/…, /data/manifest.json, /api/…, href="/runs"),
// and under a prefix the page loads nothing.
//
// How: reports/svelte.config.js sets SvelteKit's `paths.relative` (Evidence sets it false). Then
// SvelteKit writes relative asset URLs (./_app/…, ../_app/…) into every prerendered page, and its
// `base` (`$app/paths`) is relative while a page is prerendered ('.', '..', '../..') and, in the
// browser, the prefix the page was opened under (resolved from the page's own URL). Evidence
// still adds its config's basePath (a constant) to the URLs it makes, so two edits of
// @evidence-dev/sdk make it use SvelteKit's base instead:
//   - src/utils/svelte/index.js: addBasePath('/x'), which Evidence calls for its fetches (the
//     data manifest, the Parquet files, the prerendered queries, the pages manifest) and for the
//     links of its layout (sidebar, header, breadcrumbs), returns base + '/x': '../x' in a
//     prerendered page, '/prefix/x' in the browser.
//   - src/build-dev/svelte/processors/addBasePathToHrefAndSrc/addBasePathToHrefAndSrc.js: a
//     root-absolute link or image of a page's markdown (`[runs](/runs/)` → href="/runs/") is
//     compiled as href={addBasePath("/runs/")} (every +page.md imports addBasePath), instead of
//     getting the config's constant prefix.
// And one file added to Evidence's project template (@evidence-dev/evidence/template), which
// `evidence build` copies into .evidence/template:
//   - src/hooks.js: SvelteKit's reroute hook reads …/index.html as …/ (its folder's page). An S3
//     website's link, the Argo UI's file list and a bucket browser name the file: the page
//     loaded, but in the browser SvelteKit found no route for /index.html (Evidence asked for
//     api/null/evidencemeta.json, a 404).
// A user-set deployment.basePath would be added twice: pvbench sets none (the prefix is found
// at run time).
//
// Every replaced snippet must match the installed upstream code exactly once; if the sdk
// changes, this script exits non-zero and `npm ci` fails (loudly, on purpose).

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { replaceOnce as replaceOnceIn } from './replace-once.mjs';

const MARKER = 'pvbench-relative-base v1';
const FAMILY = 'pvbench-relative-base';
const EXPECTED_SDK = '4.0.2';

const projectDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const sdkDir = path.join(projectDir, 'node_modules', '@evidence-dev', 'sdk');
const templateDir = path.join(projectDir, 'node_modules', '@evidence-dev', 'evidence', 'template');
const HOOKS = path.join(templateDir, 'src', 'hooks.js');
const HOOKS_SOURCE = `// ${MARKER} (reports/scripts/relative-base.mjs): a page's index.html is its folder's page
// (…/report/index.html, …/report/runs/index.html), whatever prefix the site is served under.

/** @type {import('@sveltejs/kit').Reroute} */
export function reroute({ url }) {
	if (url.pathname.endsWith('/index.html')) return url.pathname.slice(0, -'index.html'.length);
}
`;

function fail(msg) {
	console.error(`\n[pvbench relative-base] ERROR: ${msg}\n`);
	console.error(
		'The patch that makes the built report work under any path prefix (Argo UI artifact view,\n' +
			'S3 website, ingress sub-path) could not be applied. Update reports/scripts/relative-base.mjs\n' +
			'for the installed version of @evidence-dev/sdk.'
	);
	process.exit(1);
}

if (!existsSync(path.join(sdkDir, 'package.json'))) fail('@evidence-dev/sdk is not installed (run npm ci in reports/ first)');
const version = JSON.parse(readFileSync(path.join(sdkDir, 'package.json'), 'utf8')).version;
if (version !== EXPECTED_SDK) fail(`@evidence-dev/sdk is version ${version}, the patch was written for ${EXPECTED_SDK}`);

const patches = {
	'src/utils/svelte/index.js': [
		[
			`/** @type {(path: string) => string} */
export const addBasePath = (path) => _addBasePath(path, config);`,
			`// ${MARKER}: SvelteKit's base (paths.relative, reports/svelte.config.js): '.', '..' or
// '../..' while a page is prerendered (relative URLs in the HTML), the prefix the site is served
// under in the browser. A path that has it already is left as it is (a link given twice).
import { base as pvbenchBase } from '$app/paths';
/** @type {(path: string) => string} */
export const addBasePath = (path) => {
	const given = _addBasePath(path, config);
	if (typeof given !== 'string' || !given.startsWith('/') || given.startsWith('//')) return given;
	if (pvbenchBase.startsWith('/') && (given === pvbenchBase || given.startsWith(pvbenchBase + '/'))) {
		return given;
	}
	return pvbenchBase + given;
};`
		]
	],
	'src/build-dev/svelte/processors/addBasePathToHrefAndSrc/addBasePathToHrefAndSrc.js': [
		[
			`		let r = content;
`,
			`		// ${MARKER}: a quoted root-absolute href/src of the markup (not of its <script> or
		// <style>) becomes an expression, resolved by the patched addBasePath when the page
		// renders: relative in the prerendered HTML, under the served prefix in the browser.
		// href="/runs/" → href={addBasePath("/runs/")}; with Svelte's {…} in it,
		// href="/a/{x}/" → href={addBasePath(\`/a/\${x}/\`)}
		content = content
			.split(/(<script[\\s>][\\s\\S]*?<\\/script>|<style[\\s>][\\s\\S]*?<\\/style>)/)
			.map((part, i) =>
				i % 2
					? part
					: part.replace(/(\\s)(href|src)=(?:"(\\/(?!\\/)[^"]*)"|'(\\/(?!\\/)[^']*)')/g, (whole, space, name, dq, sq) => {
							const url = pvbenchUrlExpression(dq ?? sq);
							return url === undefined ? whole : \`\${space}\${name}={addBasePath(\${url})}\`;
						})
			)
			.join('');
		let r = content;
`
		],
		[
			`/** @type {import("@evidence-dev/sdk/config").EvidenceConfig} */
let cfg;
`,
			`/** @type {import("@evidence-dev/sdk/config").EvidenceConfig} */
let cfg;

/**
 * ${MARKER}: a Svelte attribute value ("/a/{x}/b") as one JavaScript expression: a string, or a
 * template literal with the {…} parts as its \${…}; undefined when its braces do not balance.
 * @param {string} value
 */
function pvbenchUrlExpression(value) {
	// the text as Svelte reads it (entities decoded: a JavaScript string does not decode them)
	const text = (part) =>
		part.replace(/&(amp|quot|#39|lt|gt);/g, (_, e) => ({ amp: '&', quot: '"', '#39': "'", lt: '<', gt: '>' })[e]);
	if (!value.includes('{') && !value.includes('}')) return JSON.stringify(text(value));
	const escape = (part) => text(part).replace(/[\\\\\`$]/g, (c) => '\\\\' + c);
	let out = '';
	let depth = 0;
	let start = 0;
	for (let i = 0; i < value.length; i++) {
		const c = value[i];
		if (c === '{') {
			if (depth === 0) {
				out += escape(value.slice(start, i));
				start = i + 1;
			}
			depth++;
		} else if (c === '}') {
			if (depth === 0) return undefined;
			depth--;
			if (depth === 0) {
				out += '\${' + value.slice(start, i) + '}';
				start = i + 1;
			}
		}
	}
	if (depth !== 0) return undefined;
	return '\`' + out + escape(value.slice(start)) + '\`';
}
`
		]
	]
};

let patched = 0;
for (const [rel, steps] of Object.entries(patches)) {
	const file = path.join(sdkDir, rel);
	let src = readFileSync(file, 'utf8');
	if (src.includes(MARKER)) continue; // already patched (npm ci re-installs a pristine copy)
	if (src.includes(FAMILY)) fail(`${rel} carries an older version of this patch; reinstall: rm -rf node_modules && npm ci`);
	for (const [from, to] of steps) src = replaceOnceIn(src, from, to, rel, fail);
	writeFileSync(file, src);
	patched++;
}
for (const rel of Object.keys(patches)) {
	if (!readFileSync(path.join(sdkDir, rel), 'utf8').includes(MARKER)) fail(`${rel} is not patched`);
}
if (!existsSync(path.join(templateDir, 'src', 'hooks.client.js'))) fail(`${templateDir}/src is not Evidence's template`);
if (!existsSync(HOOKS)) {
	writeFileSync(HOOKS, HOOKS_SOURCE);
	patched++;
} else if (readFileSync(HOOKS, 'utf8') !== HOOKS_SOURCE) {
	const hooks = readFileSync(HOOKS, 'utf8');
	if (!hooks.includes(FAMILY)) fail(`${HOOKS} exists already (Evidence has universal hooks now): merge the reroute hook into it`);
	fail(`${HOOKS} carries an older version of this patch; reinstall: rm -rf node_modules && npm ci`);
}
console.log(
	`[pvbench relative-base] @evidence-dev/sdk ${EXPECTED_SDK}: ` +
		(patched ? `patched ${patched} file(s)` : 'already patched') +
		' (the built site works under any path prefix)'
);
