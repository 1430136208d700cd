// pvbench: the one edit its postinstall patches make (offline-parquet.mjs, kit-patch.mjs).

/**
 * `src` with `from` replaced by `to`; `from` must occur exactly once in it (in `file`), else
 * `fail` is called with why: the upstream code changed, and the patch must be checked again.
 */
export function replaceOnce(src, from, to, file, fail) {
	const first = src.indexOf(from);
	if (first < 0 || src.indexOf(from, first + 1) >= 0) {
		fail(
			`${file}: expected exactly one occurrence of:\n---\n${from}\n---\n` +
				`found ${first < 0 ? 'none' : 'several'}; the upstream code changed.`
		);
	}
	return src.slice(0, first) + to + src.slice(first + from.length);
}
