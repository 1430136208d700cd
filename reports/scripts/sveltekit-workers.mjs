#!/usr/bin/env node
// pvbench: make SvelteKit's build workers give their memory back (postinstall step, idempotent).
//
// Why: `evidence build` is one `vite build`, in which SvelteKit runs two steps in worker threads
// (src/utils/fork.js): analysing the routes, then prerendering every page. Version 2.8.4
// `unref()`s a worker once it has sent its result instead of ending it, so the analysing
// worker's heap stays in the process through the client build and the prerendering, and each
// worker starts beside the garbage the build left on the main heap. The build of a
// 100,000-result campaign's report peaked at 2.98 GiB as installed, 2.45 GiB patched
// (ci/bench_aggregate.py).
//
// How, in fork.js:
//   - a worker ends itself once it has posted its result (process.exit in a worker thread ends
//     that thread, with its exit handlers). SvelteKit made the same change upstream
//     (sveltejs/kit#17135, "exit build workers after completing their tasks"), in a version
//     that @evidence-dev/evidence 40.1.8 does not use;
//   - the main thread collects its garbage before it starts a worker, when Node runs with
//     --expose-gc (`pvbench report build` sets it; without it nothing changes);
//   - a worker that ends without a result rejects the step (upstream only rejects a non-zero
//     exit code; with workers that exit, a result lost would otherwise wait forever).
//
// Every replaced snippet must match the installed upstream code exactly once; if SvelteKit
// changes, this script exits non-zero and `npm ci` fails (loudly, on purpose). Re-check it when
// bumping @evidence-dev/evidence.

import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const MARKER = 'pvbench-sveltekit-workers v1';
const EXPECTED_KIT = '2.8.4';

const projectDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const kitDir = path.join(projectDir, 'node_modules', '@sveltejs', 'kit');

function fail(msg) {
	console.error(`\n[pvbench sveltekit-workers] ERROR: ${msg}\n`);
	console.error(
		'The patch that ends SvelteKit build workers could not be applied. Update\n' +
			'reports/scripts/sveltekit-workers.mjs for the installed version.'
	);
	process.exit(1);
}

let version;
try {
	version = JSON.parse(readFileSync(path.join(kitDir, 'package.json'), 'utf8')).version;
} catch {
	fail('@sveltejs/kit is not installed (run npm ci in reports/ first)');
}
if (version !== EXPECTED_KIT) fail(`@sveltejs/kit is version ${version}, the patch was written for ${EXPECTED_KIT}`);

/** Replace `from` (must occur exactly once) by `to`. */
function replaceOnce(src, from, to) {
	const first = src.indexOf(from);
	if (first < 0 || src.indexOf(from, first + 1) >= 0) {
		fail(
			`fork.js: expected exactly one occurrence of:\n---\n${from}\n---\n` +
				`found ${first < 0 ? 'none' : 'several'}; the upstream code changed.`
		);
	}
	return src.slice(0, first) + to + src.slice(first + from.length);
}

const steps = [
	[
		`					parentPort?.postMessage({
						type: 'result',
						module,
						payload: await callback(data.payload)
					});`,
		`					parentPort?.postMessage({
						type: 'result',
						module,
						payload: await callback(data.payload)
					});
					// ${MARKER}: the task is done; end this worker thread so its heap is freed
					process.exit(0);`
	],
	[
		`		return new Promise((fulfil, reject) => {
			const worker = new Worker(`,
		`		return new Promise((fulfil, reject) => {
			// ${MARKER}: collect the build's garbage before a worker's heap adds to the process
			globalThis.gc?.();
			const worker = new Worker(`
	],
	[
		`					reject(new Error(\`Failed with code \${code}\`));
				}
			});`,
		`					reject(new Error(\`Failed with code \${code}\`));
				}
				// ${MARKER}: Node delivers a worker's messages before its exit event, so one that
				// ended without sending its result fails the build instead of leaving it waiting
				reject(new Error('SvelteKit build worker exited without a result'));
			});`
	]
];

const file = path.join(kitDir, 'src', 'utils', 'fork.js');
let src = readFileSync(file, 'utf8');
const already = src.includes(MARKER);
if (!already) {
	if (src.includes('pvbench-sveltekit-workers')) {
		fail('fork.js carries an older version of this patch; reinstall: rm -rf node_modules && npm ci');
	}
	for (const [from, to] of steps) src = replaceOnce(src, from, to);
	writeFileSync(file, src);
}
if (readFileSync(file, 'utf8').split(MARKER).length !== steps.length + 1) fail('fork.js is not patched');
console.log(
	`[pvbench sveltekit-workers] @sveltejs/kit ${EXPECTED_KIT}: ` +
		(already ? 'already patched' : 'patched src/utils/fork.js') +
		' (build workers end when done)'
);
