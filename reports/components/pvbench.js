// Presentation helpers for the pvbench report pages (imported as $lib/pvbench.js).
// No statistics here: every number comes precomputed from the analytics layer's report_* tables;
// these functions only group rows into panels and build chart configurations.

/** Colours for storage classes (Evidence's default palette, fixed so that bands match lines). */
export const PALETTE = [
	'#236aa4',
	'#c2410c',
	'#46a485',
	'#8f3d56',
	'#f4b548',
	'#45a1bf',
	'#71b9f4',
	'#8dacbf',
	'#d2c6ac',
	'#85c7c6'
];

/** Rows of a query result (Evidence Query or array) as a plain array. */
export const asRows = (rows) => [...(rows ?? [])];

/**
 * Distinct panels (first row of each group) in data order.
 * @param {Iterable<Record<string, unknown>>} rows
 * @param {string[]} cols grouping columns
 */
export function panels(rows, cols) {
	const seen = new Map();
	for (const r of asRows(rows)) {
		const k = cols.map((c) => r[c]).join('\u001f');
		if (!seen.has(k)) seen.set(k, r);
	}
	return [...seen.values()];
}

/** Sections per campaign and profile, the sweep profile last (its cells are best read as curves). */
export const sections = (rows) =>
	panels(rows, ['campaign', 'profile']).sort(
		(a, b) => (a.profile === 'sweep') - (b.profile === 'sweep')
	);

/** Rows that share the grouping columns' values with `panel`. */
export const rowsOf = (rows, panel, cols) =>
	asRows(rows).filter((r) => cols.every((c) => r[c] === panel[c]));

/** "n = 20" or "n = 10–20" for the n column of some rows. */
export function nText(rows) {
	const ns = asRows(rows)
		.map((r) => Number(r.n))
		.filter((n) => Number.isFinite(n));
	if (!ns.length) return 'n = 0';
	const lo = Math.min(...ns);
	const hi = Math.max(...ns);
	return lo === hi ? `n = ${lo}` : `n = ${lo}–${hi}`;
}

const fmtNum = (v) =>
	v == null || Number.isNaN(v)
		? '–'
		: Number(v).toLocaleString('en-US', { maximumFractionDigits: Math.abs(v) >= 100 ? 0 : 1 });

/**
 * ECharts option: mean per fsync setting (x) for every storage class, with a ± sd band.
 * @param {Iterable<Record<string, any>>} rows report_fsync rows
 * @param {'iops'|'bw'} kind
 */
export function fsyncChart(rows, kind) {
	const rs = asRows(rows)
		.filter((r) => r.kind === kind)
		.sort((a, b) => a.fsync_order - b.fsync_order);
	const labels = [...new Map(rs.map((r) => [r.fsync_order, r.fsync_label])).values()];
	const classes = [...new Set(rs.map((r) => r.storage_class))];
	const unit = rs[0]?.unit ?? '';
	const what = kind === 'iops' ? 'Random write IOPS (4k)' : 'Random write bandwidth (128k)';
	const series = [];
	classes.forEach((sc, i) => {
		const color = PALETTE[i % PALETTE.length];
		const by = new Map(rs.filter((r) => r.storage_class === sc).map((r) => [r.fsync_label, r]));
		const pick = (f) => labels.map((l) => (by.has(l) ? f(by.get(l)) : null));
		// band: invisible line at mean - sd, then (high - low) stacked on it and filled
		series.push({
			name: sc,
			type: 'line',
			stack: `band-${i}`,
			data: pick((r) => r.low),
			symbol: 'none',
			lineStyle: { opacity: 0 },
			silent: true,
			tooltip: { show: false },
			color
		});
		series.push({
			name: sc,
			type: 'line',
			stack: `band-${i}`,
			data: pick((r) => r.high - r.low),
			symbol: 'none',
			lineStyle: { opacity: 0 },
			areaStyle: { color, opacity: 0.18 },
			silent: true,
			tooltip: { show: false },
			color
		});
		series.push({
			name: sc,
			type: 'line',
			data: pick((r) => r.mean),
			symbolSize: 8,
			lineStyle: { width: 2.5 },
			z: 5,
			color,
			pvbenchRows: pick((r) => r)
		});
	});
	const ns = nText(rs);
	const title = `${what} vs fsync (${unit})`;
	const subtitle = `mean ± sd over repetitions, ${ns} per point`;
	return {
		...describe(title, subtitle),
		title: { text: title, subtext: subtitle, left: 0 },
		legend: { top: 48, data: classes },
		grid: { top: 90, left: 70, right: 20, bottom: 50 },
		tooltip: {
			trigger: 'axis',
			formatter: (params) => {
				const lines = [`fsync = ${params[0]?.axisValue}`];
				for (const p of params) {
					const s = series[p.seriesIndex];
					const r = s?.pvbenchRows?.[p.dataIndex];
					if (r) lines.push(`${p.marker}${s.name}: ${fmtNum(r.mean)} ± ${fmtNum(r.sd)} ${r.unit} (n = ${r.n})`);
				}
				return lines.join('<br/>');
			}
		},
		xAxis: {
			type: 'category',
			data: labels,
			name: 'fsync every N writes',
			nameLocation: 'middle',
			nameGap: 30,
			boundaryGap: false
		},
		yAxis: { type: 'value', name: unit, min: 0 },
		series
	};
}

/** Titles of the sweep profile's workload groups and load levels (see sdk/pvbench/profiles/catalog.py). */
export const SWEEP_GROUPS = {
	randread: 'Random read',
	randwrite: 'Random write',
	mix70: 'Database mix 70/30',
	mix50: 'Balanced mix 50/50'
};
export const SWEEP_LOADS = {
	qd1: 'QD1',
	qd32: 'QD32',
	qd1x32: 'QD1×32 jobs',
	p80: '80% load'
};

/** Sweep rows of one group and direction, with a readable load label, in block size order. */
export function sweepRows(rows, group, direction) {
	return asRows(rows)
		.filter((r) => r.wl_group === group && r.direction === direction)
		.map((r) => ({ ...r, load_level: SWEEP_LOADS[r.load] ?? r.load }))
		.sort((a, b) => {
			const la = Object.keys(SWEEP_LOADS).indexOf(a.load);
			const lb = Object.keys(SWEEP_LOADS).indexOf(b.load);
			return la - lb || a.bs_bytes - b.bs_bytes;
		});
}

/** Panels (group × direction) present in the sweep rows, in the profile's order. */
export function sweepPanels(rows) {
	const have = new Set(asRows(rows).map((r) => `${r.wl_group}|${r.direction}`));
	const out = [];
	for (const g of [...Object.keys(SWEEP_GROUPS), ...new Set(asRows(rows).map((r) => r.wl_group))]) {
		for (const d of ['read', 'write']) {
			const k = `${g}|${d}`;
			if (have.has(k) && !out.some((p) => p.key === k)) {
				out.push({ key: k, group: g, direction: d, title: `${SWEEP_GROUPS[g] ?? g} — ${d}` });
			}
		}
	}
	return out;
}

/**
 * ECharts options that describe a chart for screen readers (aria-label on the chart element):
 * its title, unit and n, which ECharts otherwise only paints into the canvas.
 */
export const describe = (title, subtitle) => ({
	aria: { enabled: true, label: { description: `${title}. ${subtitle}` } }
});
