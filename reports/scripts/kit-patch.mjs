// pvbench: what its SvelteKit patches share (sveltekit-workers.mjs, sveltekit-bundles.mjs).
//
// A patch is a list of [upstream snippet, replacement] steps for one file of @sveltejs/kit. Each
// snippet must occur exactly once in the installed file, every replacement carries the patch's
// marker, and a file is patched once (the marker is there) or refused (an older version of the
// patch is); if SvelteKit changed, the script exits non-zero and `npm ci` fails, loudly, on purpose.

import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { replaceOnce } from './replace-once.mjs';

export const EXPECTED_KIT = '2.8.4';

const projectDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const kitDir = path.join(projectDir, 'node_modules', '@sveltejs', 'kit');

/**
 * The patcher of one script: `name` (e.g. 'sveltekit-workers'), `marker` (its versioned marker,
 * e.g. 'pvbench-sveltekit-workers v2', whose text before ' v' names every version of it) and
 * `purpose` (what is lost without it, for the error message).
 */
export function kitPatcher({ name, marker, purpose }) {
	const family = marker.replace(/ v\d+$/, '');

	function fail(msg) {
		console.error(`\n[pvbench ${name}] ERROR: ${msg}\n`);
		console.error(
			`The patch that ${purpose} could not be applied. Update\n` +
				`reports/scripts/${name}.mjs for the installed version.`
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

	/**
	 * Apply `steps` to the kit file at `relative` (once); `requires`: a marker the file must carry
	 * first (a patch this one builds on). Returns whether it was patched already.
	 */
	function apply(relative, steps, { requires } = {}) {
		const file = path.join(kitDir, relative);
		let src = readFileSync(file, 'utf8');
		if (requires && !src.includes(requires)) fail(`${relative} lacks ${requires}: apply that patch first`);
		const already = src.includes(marker);
		if (!already) {
			if (src.includes(family)) {
				fail(`${relative} carries an older version of this patch; reinstall: rm -rf node_modules && npm ci`);
			}
			for (const [from, to] of steps) src = replaceOnce(src, from, to, relative, fail);
			writeFileSync(file, src);
		}
		if (readFileSync(file, 'utf8').split(marker).length !== steps.length + 1) fail(`${relative} is not patched`);
		return already;
	}

	return { apply };
}
