#!/usr/bin/env node
// pvbench: let SvelteKit's build reuse the server and client bundles of an earlier build
// (postinstall step, after sveltekit-workers.mjs; idempotent).
//
// Why: `evidence build` is one `vite build`: the server bundle (Rollup over every Evidence
// component, ~25 s here), then in its writeBundle hook the client bundle (~55 s), then
// prerendering every page with the data (~25 s). The two bundles do not depend on the data: the
// pages read their tables at prerender time and in the browser (Parquet under static/data), so
// two builds of the same pages with different campaigns differ only in the prerendered HTML and
// the data (checked file by file: the server and client bundles differed in nothing but the
// build's random version name and the site title, which Vite inlines). Rebuilding them for every
// campaign was most of the report's 2 minutes.
//
// How, in src/exports/vite/index.js, when PVBENCH_BUNDLE_CACHE names a directory
// (`pvbench report build` sets it to .evidence/pvbench-bundles/<key>, the key a hash of
// everything the bundles are made from: the project's pages, components, config and locked
// packages, these patches, the VITE_/EVIDENCE_/PUBLIC_ environment; sdk/pvbench/report/build.py):
//   - if it holds a bundle (bundle.json), the server build compiles one empty module instead of
//     the app; the deferred writeBundle work (sveltekit-workers.mjs) then restores the cached
//     server output and the features its chunks tracked, takes the routes' analysis from the cache
//     too, restores the cached client output instead of running the client build (and copies
//     static/, the new data with it, as the client build's copyPublicDir does), and prerenders
//     every page with the new data; the adapter then writes the site as always;
//   - otherwise the build runs as installed and, once its client bundle is written, stores both
//     bundles there with the routes' analysis (staged beside it, then renamed: a build that fails
//     leaves no bundle).
// The analysis (SvelteKit's `analyse`: every route's config, methods, prerender option and
// entries, found by loading the server bundle in a worker) is ~8 s of a ~30 s build that reuses
// the bundles, and is made of what the key covers: the server bundle, and the pages directory
// Evidence's metadata endpoint lists for its entries. It is stored with node:v8's serializer,
// the structured clone its worker returns it by (its routes are a Map).
// Without PVBENCH_BUNDLE_CACHE nothing changes.
//
// Every replaced snippet must match the installed code exactly once; if SvelteKit changes, this
// script exits non-zero and `npm ci` fails (loudly, on purpose). Re-check it when bumping
// @evidence-dev/evidence.

import path from 'node:path';

import { EXPECTED_KIT, kitPatcher } from './kit-patch.mjs';

const MARKER = 'pvbench-sveltekit-bundles v2';
const WORKERS_MARKER = 'pvbench-sveltekit-workers v2';
const kit = kitPatcher({ name: 'sveltekit-bundles', marker: MARKER, purpose: 'lets SvelteKit reuse the report bundles' });

const steps = [
	[
		`const cwd = process.cwd();
`,
		`const cwd = process.cwd();

// ${MARKER}: the server and client bundles of an earlier build of the same pages, reused, with
// the routes' analysis (reports/scripts/sveltekit-bundles.mjs says why); null without PVBENCH_BUNDLE_CACHE
import { serialize as pvbench_serialize, deserialize as pvbench_deserialize } from 'node:v8';
const pvbench_bundles = (() => {
	const dir = process.env.PVBENCH_BUNDLE_CACHE;
	if (!dir) return null;
	const meta_file = path.join(dir, 'bundle.json');
	const meta = fs.existsSync(meta_file) ? JSON.parse(fs.readFileSync(meta_file, 'utf8')) : null;
	const staging = meta ? null : \`\${dir}.partial-\${process.pid}\`;
	const cp = (from, to) => fs.cpSync(from, to, { recursive: true });
	return {
		reused: meta !== null,
		/** The server build's output: the cached one put in its place, or kept to be cached. */
		server(out, tracked_features) {
			if (meta) {
				rimraf(\`\${out}/server\`);
				cp(path.join(dir, 'server'), \`\${out}/server\`);
				Object.assign(tracked_features, meta.tracked_features);
				console.log(\`[pvbench] reusing the server and client bundles in \${dir}\`);
			} else {
				rimraf(staging);
				cp(\`\${out}/server\`, path.join(staging, 'server'));
			}
		},
		/** In place of SvelteKit's analysis of the routes: the cached one (null if none: analysed as always). */
		analysis() {
			const file = path.join(dir, 'analysis.v8');
			if (!meta || !fs.existsSync(file)) return null;
			console.log(\`[pvbench] reusing the routes' analysis in \${dir}\`);
			return pvbench_deserialize(fs.readFileSync(file));
		},
		/** In place of the client build: its cached output, with static/ copied as Vite copies it. */
		client(out, kit) {
			rimraf(\`\${out}/client\`);
			cp(path.join(dir, 'client'), \`\${out}/client\`);
			if (fs.existsSync(kit.files.assets)) cp(kit.files.assets, \`\${out}/client\`);
			return { output: meta.output };
		},
		/** After a client build: both bundles cached, with what the rest of the build reads of its output and the analysis. */
		save(out, kit, output, tracked_features, metadata) {
			for (const name of [kit.appDir, '.vite']) cp(\`\${out}/client/\${name}\`, path.join(staging, 'client', name));
			const kept = output
				.filter((item) => item.type === 'asset' && item.fileName.endsWith('.css'))
				.map(({ fileName, source }) => ({ type: 'asset', fileName, source: String(source) }));
			if (output.some((item) => item.type === 'chunk' && item.modules[env_dynamic_public])) {
				kept.push({ type: 'chunk', fileName: '', modules: { [env_dynamic_public]: {} } });
			}
			fs.writeFileSync(path.join(staging, 'analysis.v8'), pvbench_serialize(metadata));
			fs.writeFileSync(path.join(staging, 'bundle.json'), JSON.stringify({ tracked_features, output: kept }));
			try {
				fs.renameSync(staging, dir);
			} catch {
				rimraf(staging); // another build cached the same bundles first
			}
		}
	};
})();
`
	],
	[
		`				new_config = {
					base: ssr ? assets_base(kit) : client_base,
`,
		`				if (ssr && pvbench_bundles?.reused) {
					// ${MARKER}: the server bundle is the cached one; build one empty module
					for (const name of Object.keys(input)) delete input[name];
					const empty = path.resolve(kit.outDir, 'generated', 'pvbench-empty.js');
					mkdirp(path.dirname(empty));
					fs.writeFileSync(empty, 'export {};\\n');
					input.index = empty;
				}

				new_config = {
					base: ssr ? assets_base(kit) : client_base,
`
	],
	[
		`				/** @type {import('vite').Manifest} */
				const server_manifest = JSON.parse(read(\`\${out}/server/\${vite_config.build.manifest}\`));
`,
		`				pvbench_bundles?.server(out, tracked_features); // ${MARKER}

				/** @type {import('vite').Manifest} */
				const server_manifest = JSON.parse(read(\`\${out}/server/\${vite_config.build.manifest}\`));
`
	],
	[
		`				const metadata = await analyse({
`,
		`				const metadata = pvbench_bundles?.analysis() ?? await analyse({ // ${MARKER}
`
	],
	[
		`					await vite.build({
						configFile: vite_config.configFile,
`,
		`					pvbench_bundles?.reused ? pvbench_bundles.client(out, kit) : await vite.build({ // ${MARKER}
						configFile: vite_config.configFile,
`
	],
	[
		`				copy(
					\`\${out}/server/\${kit.appDir}/immutable/assets\`,
`,
		`				if (pvbench_bundles && !pvbench_bundles.reused) pvbench_bundles.save(out, kit, output, tracked_features, metadata); // ${MARKER}

				copy(
					\`\${out}/server/\${kit.appDir}/immutable/assets\`,
`
	]
];

const relative = path.join('src', 'exports', 'vite', 'index.js');
const already = kit.apply(relative, steps, { requires: WORKERS_MARKER });
console.log(
	`[pvbench sveltekit-bundles] @sveltejs/kit ${EXPECTED_KIT}: ` +
		(already ? 'already patched' : `patched ${relative}`) +
		' (a build reuses the server and client bundles, and the routes\' analysis, cached under PVBENCH_BUNDLE_CACHE)'
);
