#!/usr/bin/env node
// pvbench: make SvelteKit's build give memory back (postinstall step, idempotent).
//
// Why: `evidence build` is one `vite build` of the server bundle, in whose writeBundle hook
// SvelteKit 2.8.4 does the rest: it analyses the routes in a worker thread, runs the client build
// (a second `vite.build`), then prerenders every page in another worker. So the server build's
// whole module graph (Rollup's ASTs, ~0.6 GB of heap, held by the hook's plugin context) stays
// live through the client build; the analysing worker's heap stays too, as 2.8.4 `unref()`s a
// worker instead of ending it; and each worker starts beside the garbage the build left. The
// build of a 100,000-result campaign's report peaked at 2.98 GiB as installed, 2.45 GiB with v1
// of this patch (fork.js only) and ~2 GiB with v2 (pvbench_lab.bench_aggregate; the bench prints it).
//
// How, in src/utils/fork.js:
//   - a worker ends itself once it has posted its result (process.exit in a worker thread ends
//     that thread, with its exit handlers). SvelteKit made the same change upstream
//     (sveltejs/kit#17135, "exit build workers after completing their tasks"), in a version
//     that @evidence-dev/evidence 40.1.8 does not use;
//   - the main thread collects its garbage before it starts a worker, twice, when Node runs with
//     --expose-gc (`pvbench report build` sets it; without it nothing changes): measured, after
//     the client build one collection left 1.1 GB of heap committed during prerendering, two
//     0.47 GB;
//   - a worker that ends without a result rejects the step (upstream only rejects a non-zero
//     exit code; with workers that exit, a result lost would otherwise wait forever).
// And in src/exports/vite/index.js:
//   - writeBundle of the server build only records its work; closeBundle starts it once Vite's
//     build() has returned (setImmediate), so the server build's graph is garbage by then (the
//     heap after analysing the routes: 0.58 GB before, 0.16 GB after). The work and its order
//     are unchanged (analyse, client build, prerender, then the adapter SvelteKit's closeBundle
//     ran); an error in it ends `vite build` with exit code 1, as Vite's CLI does.
//
// Every replaced snippet must match the installed upstream code exactly once; if SvelteKit
// changes, this script exits non-zero and `npm ci` fails (loudly, on purpose). Re-check it when
// bumping @evidence-dev/evidence.

import path from 'node:path';

import { EXPECTED_KIT, kitPatcher } from './kit-patch.mjs';

const MARKER = 'pvbench-sveltekit-workers v2';
const kit = kitPatcher({ name: 'sveltekit-workers', marker: MARKER, purpose: 'makes SvelteKit build give memory back' });

const forkSteps = [
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
			// (twice: the second collection is the one that gives the emptied heap back)
			globalThis.gc?.();
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

const viteSteps = [
	[
		`let secondary_build_started = false;
`,
		`let secondary_build_started = false;

// ${MARKER}: the work of the server build's writeBundle, deferred until Vite's build() has
// returned; RUNNING_DEFERRED while it runs
let deferred_build_work = null;
const RUNNING_DEFERRED = Symbol('running deferred build work');
`
	],
	[
		`				if (secondary_build_started) return; // only run this once
`,
		`				if (secondary_build_started) return; // only run this once
				// ${MARKER}: not now, while this hook's context holds the server build's module
				// graph: closeBundle calls this handler again (without that context) once build() returned
				if (deferred_build_work !== RUNNING_DEFERRED) {
					deferred_build_work = () => plugin_compile.writeBundle.handler();
					return;
				}
`
	],
	[
		`				if (!vite_config.build.ssr) return;
				await finalise?.();
`,
		`				if (!vite_config.build.ssr) return;
				if (typeof deferred_build_work === 'function') {
					// ${MARKER}: setImmediate runs after the promise callbacks that end Vite's
					// build(), which drops the server bundle; the adapter (finalise) runs after the work
					const work = deferred_build_work;
					deferred_build_work = RUNNING_DEFERRED;
					setImmediate(() => {
						work()
							.then(() => finalise?.())
							.then(
								() => {
									deferred_build_work = null;
								},
								(error) => {
									console.error(\`error during build:\\n\${error?.stack ?? error}\`);
									process.exit(1);
								}
							);
					});
					return;
				}
				await finalise?.();
`
	]
];

const already = [
	kit.apply(path.join('src', 'utils', 'fork.js'), forkSteps),
	kit.apply(path.join('src', 'exports', 'vite', 'index.js'), viteSteps)
].every(Boolean);
console.log(
	`[pvbench sveltekit-workers] @sveltejs/kit ${EXPECTED_KIT}: ` +
		(already ? 'already patched' : 'patched src/utils/fork.js and src/exports/vite/index.js') +
		' (build workers end when done; the client build starts after the server build is freed)'
);
