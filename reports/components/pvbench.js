// Presentation helpers for the pvbench report pages (imported as $lib/pvbench.js).
// No statistics here: every number comes precomputed from the analytics layer's report_* tables;
// these functions only group rows into panels and build chart configurations.

// The profile catalog's labels, rendered from sdk/pvbench/profiles/catalog.py (`pvbench argo render`).
import { SWEEP_PROFILE, SWEEP_GROUPS, SWEEP_LOADS } from './profiles.js';

export { SWEEP_PROFILE, SWEEP_GROUPS, SWEEP_LOADS };

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
		(a, b) => (a.profile === SWEEP_PROFILE) - (b.profile === SWEEP_PROFILE)
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
					if (r) lines.push(`${p.marker}${s.name}: ${meanSd(r.mean, r.sd, r.unit)} (n = ${r.n})`);
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

// ------------------------------------------------------------------ statistics pages
// Formatting only: the verdicts, CIs, p-values, anomaly flags and variance splits are computed
// by pvbench.stats / analytics (report_comparisons, report_anomalies, report_occasions, …).

/** A number, grouped: 3 significant figures (what repeated storage measurements support), or `digits` decimals. */
export function num(v, digits) {
	if (v == null || Number.isNaN(Number(v))) return '–';
	const x = Number(v);
	if (digits == null) return sig(x);
	return x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }).replace('-', '−');
}

const minus = (s) => s.replace('-', '−');

/** 3 significant figures, grouped: 256083.6 → "256,000", 12.345 → "12.3", 0.01234 → "0.0123". */
export function sig(v, n = 3) {
	if (v == null || Number.isNaN(Number(v))) return '–';
	const x = Number(v);
	return minus(x.toLocaleString('en-US', { maximumSignificantDigits: n }));
}

// the decimal place of a number's k-th significant digit (10^place)
const place = (x, k) => (x === 0 || !Number.isFinite(x) ? -Infinity : Math.floor(Math.log10(Math.abs(x))) - (k - 1));

/**
 * "mean ± sd" rounded to what the spread supports: 3 significant figures of the mean, a 4th
 * only when the sd is that precise (its 2nd significant digit), both to the same place, grouped:
 * 256083.6 ± 51728.9 → "256,000 ± 52,000"; 1000.4 ± 5.2 → "1,000 ± 5".
 */
export function meanSd(mean, sd, unit) {
	if (mean == null || Number.isNaN(Number(mean))) return '–';
	const m = Number(mean);
	const s = sd == null || Number.isNaN(Number(sd)) ? 0 : Number(sd);
	let p = Math.max(place(m, 4), Math.min(place(m, 3), s > 0 ? place(s, 2) : place(m, 3)));
	if (!Number.isFinite(p)) p = 0;
	const d = Math.max(0, -p);
	const f = (x) => minus((Math.round(x / 10 ** p) * 10 ** p).toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d }));
	return `${f(m)} ± ${f(s)}${unit ? ` ${unit}` : ''}`;
}

/** The same rounding for an interval: "[244,000, 268,000]". */
export function interval(lo, hi, mean) {
	if (lo == null || hi == null || Number.isNaN(Number(lo)) || Number.isNaN(Number(hi))) return '–';
	const ref = mean ?? (Number(lo) + Number(hi)) / 2;
	let p = Math.max(place(Number(ref), 4), Math.min(place(Number(ref), 3), place(Number(hi) - Number(lo), 2)));
	if (!Number.isFinite(p)) p = 0;
	const d = Math.max(0, -p);
	const f = (x) => minus((Math.round(x / 10 ** p) * 10 ** p).toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d }));
	return `[${f(Number(lo))}, ${f(Number(hi))}]`;
}

/** Rows with display strings: mean ± sd, the 95% CI and every listed column to 3 significant figures (`<col>_s`). */
export function displayRows(rows, cols = []) {
	return asRows(rows).map((r) => {
		const out = { ...r, mean_sd: meanSd(r.mean, r.sd), ci95: interval(r.ci95_low, r.ci95_high, r.mean) };
		for (const c of cols) out[`${c}_s`] = sig(r[c]);
		return out;
	});
}

/** A signed number to 3 significant figures (or `digits` decimals): "+12.3", "−4,060", "0". */
export function signed(v, digits) {
	if (v == null || Number.isNaN(Number(v))) return '–';
	const x = Number(v);
	const s = digits == null
		? x.toLocaleString('en-US', { maximumSignificantDigits: 3 })
		: x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
	return minus(x > 0 ? `+${s}` : s);
}

/** 0.05 → "5%", −0.123 → "−12.3%" (signed when asked). */
export function pct(v, { sign = false, digits = 1 } = {}) {
	if (v == null || Number.isNaN(Number(v))) return '–';
	const x = 100 * Number(v);
	const s = x.toLocaleString('en-US', { maximumFractionDigits: digits });
	return minus(sign && x > 0 ? `+${s}%` : `${s}%`);
}

/** p-values: "0.0079", "< 0.0001". */
export function pText(p) {
	if (p == null || Number.isNaN(Number(p))) return '–';
	const x = Number(p);
	return x < 0.0001 ? '< 0.0001' : x < 0.001 ? x.toFixed(4) : x.toFixed(3);
}

const VERDICT_STYLE = {
	better: ['#166534', '#dcfce7', '▲ better'],
	worse: ['#991b1b', '#fee2e2', '▼ worse'],
	'no meaningful difference': ['#374151', '#f3f4f6', '● no meaningful difference'],
	withheld: ['#92400e', '#fef3c7', '◌ withheld']
};

/** The verdict as a coloured chip (green better, red worse, grey no meaningful difference, amber withheld). */
export function verdictChip(verdict, equivalent) {
	const [fg, bg, text] = VERDICT_STYLE[verdict] ?? ['#374151', '#fff7ed', verdict ?? '–'];
	const eq = equivalent ? ' · equivalent' : '';
	return `<span style="color:${fg};background:${bg};border-radius:4px;padding:1px 6px;white-space:nowrap;font-weight:600">${text}${eq}</span>`;
}

/** The kinds of report_comparisons, in page order (the upgrade's verdict first: what a person comes for), with what each one compares. */
export const COMPARISON_KINDS = [
	{
		kind: 'role',
		title: 'Candidate against baseline (role labels)',
		text: 'Per storage class, the results labelled role=candidate against those labelled role=baseline — e.g. before and after an upgrade that Argo Events triggered.',
		empty: 'No results carry role=baseline and role=candidate labels for the same storage class.'
	},
	{
		kind: 'run',
		title: 'Latest run against the run before',
		text: 'Per storage class, the latest run of a campaign against the run before it (ordered by when they started): did the last run get slower?',
		empty: 'No storage class has two runs with matching workloads in one campaign.'
	},
	{
		kind: 'storage_class',
		title: 'Storage class against storage class',
		text: 'Every pair of storage classes of a campaign, workload by workload (all runs and occasions pooled). The candidate is the class later in alphabetical order; the verdict says how the candidate does against the baseline.',
		empty: 'No pair of storage classes in any campaign (a campaign with one storage class has nothing to compare).'
	}
];

/** α and the smallest meaningful change the comparisons were judged with (the seed's defaults when there are none). */
export function compareSettings(rows) {
	const r = asRows(rows)[0];
	const alpha = Number(r?.alpha ?? 0.05);
	const m = Number(r?.min_change ?? 0.05);
	const confidence = `${Math.round(100 * Number(r?.confidence ?? 0.95))}%`;
	return { alpha, confidence, minChange: pct(m, { digits: 1 }), ratioBand: `${num(1 - m, 2)}–${num(1 + m, 2)}` };
}

/** One comparison = one baseline/candidate pair of one kind (its rows are the metrics, one Holm family). */
export const COMPARISON_KEY = ['kind', 'campaign', 'baseline', 'candidate', 'storage_class'];

/** Table rows of report_comparisons with the CIs, n and verdict written out for display. */
export function comparisonRows(rows) {
	return asRows(rows).map((r) => ({
		...r,
		workload_direction: `${r.workload_title} — ${r.direction}`,
		n_sides: `${r.n_baseline} / ${r.n_candidate}`,
		occasions_sides: `${r.occasions_baseline} (${r.runs_baseline} run${r.runs_baseline === 1 ? '' : 's'}) / ${r.occasions_candidate} (${r.runs_candidate} run${r.runs_candidate === 1 ? '' : 's'})`,
		basis: r.reason ? `withheld: ${r.reason}` : r.method,
		means: `${num(r.mean_baseline)} → ${num(r.mean_candidate)}`,
		diff_ci: `${signed(r.diff)} [${signed(r.diff_ci_low)}, ${signed(r.diff_ci_high)}]`,
		ratio_ci: `${num(r.ratio, 2)} [${num(r.ratio_ci_low, 2)}, ${num(r.ratio_ci_high, 2)}]`,
		p_holm_text: pText(r.p_holm),
		better_text: r.better === 'lower' ? '↓ lower' : '↑ higher',
		verdict_chip: verdictChip(r.verdict, r.equivalent)
	}));
}

/** Heading of one comparison: "OpenEBS against Azure Disk Storage · thesis", "openebs-lvm: run=after against run=before · c". */
export function comparisonTitle(c) {
	const what = `${c.candidate} against ${c.baseline}`;
	return `${c.kind === 'storage_class' ? what : `${c.storage_class}: ${what}`} · ${c.campaign}`;
}

const cellLabel = (r) => `${r.storage_class} · ${r.workload_title}${r.direction === 'total' ? '' : ` · ${r.direction}`}`;

/** Axis numbers: 40,000 → "40k". */
const compact = (v) => (Math.abs(v) >= 1000 ? `${num(v / 1000)}k` : num(v));

/**
 * ECharts option: two bars per anomaly row of one unit — its value and its reference
 * (over_limit: highest result vs declared limit; warm_up: median first repetition vs the others).
 * `flagged(row)` says what was flagged, for the tooltip.
 */
export function anomalyChart(rows, { title, valueName, referenceName, flagged }) {
	const rs = asRows(rows);
	const unit = rs[0]?.unit ?? '';
	const cats = rs.map(cellLabel);
	const subtitle = `${rs[0]?.campaign} · ${valueName} vs ${referenceName}; ${nText(rs)} results per cell · unit: ${unit}`;
	return {
		...describe(`${title} (${unit})`, subtitle),
		title: { text: `${title} (${unit})`, subtext: subtitle, left: 0 },
		legend: { top: 48, left: 0, data: [valueName, referenceName] },
		grid: { top: 80, left: 10, right: 70, bottom: 34, containLabel: true },
		tooltip: {
			trigger: 'axis',
			axisPointer: { type: 'shadow' },
			formatter: (params) => {
				const r = rs[params[0]?.dataIndex];
				if (!r) return '';
				return [cellLabel(r), ...params.map((p) => `${p.marker}${p.seriesName}: ${num(p.value)} ${unit}`),
					`${flagged ? flagged(r) : `${r.n_flagged} of ${r.n} flagged`} · ×${num(r.ratio, 2)}`].join('<br/>');
			}
		},
		yAxis: { type: 'category', data: cats, inverse: true },
		xAxis: { type: 'value', name: unit, nameLocation: 'middle', nameGap: 26, axisLabel: { formatter: compact } },
		series: [
			{
				name: valueName,
				type: 'bar',
				data: rs.map((r) => r.value),
				color: '#c2410c',
				label: { show: true, position: 'right', formatter: (p) => `×${num(rs[p.dataIndex].ratio, 2)}` }
			},
			{ name: referenceName, type: 'bar', data: rs.map((r) => r.reference), color: '#236aa4' }
		]
	};
}

/** What an over-limit / warm-up row flagged, for tooltips. */
export const flaggedResults = (r) => `${r.n_flagged} of ${r.n} results over the limit`;
export const flaggedOccasions = (r) => `first repetition slower in ${r.n_flagged} occasions`;

/** Anomaly charts: one per campaign and unit (values of one unit share an axis). */
export const ANOMALY_PANEL = ['campaign', 'unit'];

/** Height of a horizontal bar chart with one category per row. */
export const barsHeight = (rows) => `${130 + 40 * asRows(rows).length}px`;

/** Distinct units of some rows, in order of appearance. */
export const units = (rows) => [...new Set(asRows(rows).map((r) => r.unit))];

/**
 * ECharts option: for one storage class, the share of each workload's variance between
 * occasions and within an occasion (stacked to 100%).
 */
export function occasionShareChart(rows, storageClass) {
	const rs = asRows(rows);
	const cats = rs.map((r) => `${r.workload_title} — ${r.direction} (${r.unit})`);
	const occ = [...new Set(rs.map((r) => r.n_occasions))].join('–');
	const title = `${storageClass}: share of the variance (% of variance)`;
	const subtitle = `between occasions vs within an occasion; ${nText(rs)} results per workload on ${occ} occasions · units: ${units(rs).join(', ')}`;
	const series = [
		['between occasions', 'share_between', '#c2410c'],
		['within an occasion', 'share_within', '#8dacbf']
	].map(([name, col, color]) => ({
		name,
		type: 'bar',
		stack: 'share',
		color,
		data: rs.map((r) => (r[col] == null ? null : 100 * r[col])),
		label: name.startsWith('between')
			? { show: true, position: 'insideLeft', formatter: (p) => (p.value >= 8 ? `${Math.round(p.value)}%` : '') , color: '#fff' }
			: undefined
	}));
	return {
		...describe(title, subtitle),
		title: { text: title, subtext: subtitle, left: 0 },
		legend: { top: 48, data: series.map((s) => s.name) },
		grid: { top: 84, left: 30, right: 30, bottom: 34, containLabel: true },
		tooltip: {
			trigger: 'axis',
			axisPointer: { type: 'shadow' },
			formatter: (params) => {
				const r = rs[params[0]?.dataIndex];
				if (!r) return '';
				return [cats[params[0].dataIndex],
					`sd between ${num(r.sd_between)} ${r.unit}, within ${num(r.sd_within)} ${r.unit}`,
					`${Math.round(100 * (r.share_between ?? 0))}% between occasions, p = ${pText(r.p_value)} (${r.finding})`,
					`n = ${r.n} on ${r.n_occasions} occasions`].join('<br/>');
			}
		},
		yAxis: { type: 'category', data: cats, inverse: true },
		xAxis: { type: 'value', max: 100, name: '% of variance', nameLocation: 'middle', nameGap: 28 },
		series
	};
}

/** Rows with a "Workload — direction" label. */
export const withWorkload = (rows) =>
	asRows(rows).map((r) => ({ ...r, workload_direction: `${r.workload_title} — ${r.direction}` }));

/**
 * report_run_summary rows for the Runs page's table: mean ± sd rounded to what the spread
 * supports, the median and the campaign's mean to 3 significant figures, and the ratio of the
 * run's mean to the campaign's to 3 significant figures ("0.982×", "1.00×").
 */
export function runSummaryRows(rows) {
	return displayRows(withWorkload(rows), ['median', 'campaign_mean']).map((r) => ({
		...r,
		ratio_s: r.ratio_to_campaign == null || Number.isNaN(Number(r.ratio_to_campaign))
			? '–'
			: `${minus(Number(r.ratio_to_campaign).toLocaleString('en-US', { minimumSignificantDigits: 3, maximumSignificantDigits: 3 }))}×`
	}));
}

/** report_comparisons rows of kind run for the Runs page: comparisonRows plus which two runs ("after against before"). */
export const runVerdictRows = (rows) =>
	comparisonRows(rows).map((r) => ({
		...r,
		pair: `${String(r.candidate).replace(/^run=/, '')} against ${String(r.baseline).replace(/^run=/, '')}`
	}));

/** How many runs the report pools: "This campaign has 12 runs", "This data set has 14 runs in 3 campaigns". */
export function runsSentence(rows) {
	const rs = asRows(rows);
	const n = rs.reduce((a, r) => a + Number(r.n_runs), 0);
	const runs = `${n} run${n === 1 ? '' : 's'}`;
	return rs.length === 1 ? `This campaign has ${runs}` : `This data set has ${runs} in ${rs.length} campaigns`;
}

/** Most runs of a storage class and profile (report_runs' class_runs), and whether report_runs holds only the newest `kept` of them. */
export function runsShown(rows, kept = 10) {
	const total = Math.max(0, ...asRows(rows).map((r) => Number(r.class_runs ?? 0)));
	return { total, bounded: total > kept, kept };
}

const manyRuns = (rows) => new Set(asRows(rows).map((r) => r.run)).size > 1;

/**
 * report_occasion_boxplot rows with a label under each box: occasion, then weekday and start
 * hour (UTC); the run first when the storage class ran several times.
 */
export function occasionBoxRows(rows) {
	const rs = asRows(rows);
	const runs = manyRuns(rs);
	return rs.map((r) => ({
		...r,
		occasion_label: [
			runs ? r.run : null,
			r.occasion,
			r.weekday ? `${String(r.weekday).slice(0, 3)} ${r.start_hour_utc}h` : null
		]
			.filter((x) => x != null)
			.join('\n')
	}));
}

/**
 * "4 occasions", or "the newest 12 of 100 occasions" when report_occasion_boxplot holds boxes
 * for only the newest occasions of a cell (`n` = report_occasions' n_occasions, all of them).
 */
export function occasionsShown(boxRows, n) {
	const shown = asRows(boxRows).length;
	return shown > 0 && shown < Number(n) ? `the newest ${shown} of ${Number(n)} occasions` : `${Number(n)} occasions`;
}

/** Columns of the occasion box plots' grid: fewer when the labels are long (several runs, long names). */
export function occasionGridCols(rows) {
	const rs = asRows(rows);
	const longest = Math.max(0, ...rs.map((r) => Math.max(String(r.occasion).length, manyRuns(rs) ? String(r.run).length : 0)));
	const boxes = Math.max(1, ...panels(rs, ['profile', 'workload', 'direction', 'metric']).map((p) => rowsOf(rs, p, ['profile', 'workload', 'direction', 'metric']).length));
	return boxes * Math.max(longest, 7) > 40 ? 2 : 4;
}

/** ECharts options of an occasion box plot: described for screen readers, room for multi-line labels. */
export const occasionBoxOptions = (title, subtitle, rows) => ({
	...describe(title, subtitle),
	grid: { bottom: manyRuns(rows) ? 30 : 16 }
});

/** Methodology section titles. */
export const METHODOLOGY_SECTIONS = {
	setup: 'Setup',
	design: 'Design',
	units: 'Units',
	confidence: 'Confidence levels and tests',
	limits: 'Declared limits',
	cost: 'Resources and cost'
};

// ------------------------------------------------------------------ overview and verdict charts

// title, subtitle (with unit and n) and their screen-reader description, as every chart has them
const heading = (title, subtitle) => ({
	...describe(title, subtitle),
	title: { text: title, subtext: subtitle, left: 0, textStyle: { fontSize: 14 } }
});

// a round axis end at or above x (1, 1.5, 2, 2.5, … × a power of ten): whiskers must fit on the axis
const niceCeil = (x) => {
	if (!(x > 0)) return 0;
	const p = 10 ** Math.floor(Math.log10(x));
	return (Math.ceil((2 * x) / p) * p) / 2;
};

// a tooltip that shows lines for the row under the pointer (axis trigger, one row per category)
const rowTooltip = (rs, lines) => ({
	trigger: 'axis',
	axisPointer: { type: 'shadow' },
	formatter: (params) => {
		const r = rs[params[0]?.dataIndex];
		return r ? lines(r).join('<br/>') : '';
	}
});

// error bars for a custom series: data items [category index, low, high]; `horizontal` when the
// value axis is x (forest plot), else y (bars)
function errorBars(name, data, horizontal = false) {
	return {
		name,
		type: 'custom',
		data,
		z: 10,
		tooltip: { show: false },
		renderItem: (params, api) => {
			const i = api.value(0);
			const a = api.coord(horizontal ? [api.value(1), i] : [i, api.value(1)]);
			const b = api.coord(horizontal ? [api.value(2), i] : [i, api.value(2)]);
			const w = (horizontal ? api.size([0, 1])[1] : api.size([1, 0])[0]) * 0.12;
			const style = { stroke: '#111827', lineWidth: 1.5 };
			const cap = (p) => horizontal
				? { type: 'line', shape: { x1: p[0], y1: p[1] - w, x2: p[0], y2: p[1] + w }, style }
				: { type: 'line', shape: { x1: p[0] - w, y1: p[1], x2: p[0] + w, y2: p[1] }, style };
			return {
				type: 'group',
				children: [{ type: 'line', shape: { x1: a[0], y1: a[1], x2: b[0], y2: b[1] }, style }, cap(a), cap(b)]
			};
		}
	};
}

/** One chart per workload of the overview: the panel key (headline rows of report_overview). */
export const HEADLINE_PANEL = ['campaign', 'profile', 'workload', 'direction', 'metric'];

/**
 * ECharts option: the storage classes side by side for one workload's headline metric, best
 * first — mean as a bar, its 95% CI as an error bar (from the occasion means), unit on the axis.
 */
export function headlineChart(rows) {
	const rs = asRows(rows).sort((a, b) => a.rank - b.rank);
	const r0 = rs[0] ?? {};
	const unit = r0.unit ?? '';
	const better = r0.better === 'lower' ? 'lower is better' : 'higher is better';
	const title = `${r0.workload_title} — ${r0.direction} (${unit})`;
	const subtitle = `mean and 95% CI per storage class, ${better}; ${nText(rs)} results per class · unit: ${unit}`;
	return {
		...heading(title, subtitle),
		grid: { top: 64, left: 10, right: 16, bottom: 10, containLabel: true },
		tooltip: rowTooltip(rs, (r) => [`${r.storage_class} (rank ${r.rank})`, `mean ± sd ${meanSd(r.mean, r.sd, unit)}`,
			`95% CI ${interval(r.ci95_low, r.ci95_high, r.mean)} (${r.ci_basis ?? ''})`, `n = ${r.n}`]),
		xAxis: { type: 'category', data: rs.map((r) => r.storage_class), axisLabel: { interval: 0, rotate: rs.length > 4 ? 20 : 0 } },
		yAxis: {
			type: 'value', name: unit, min: 0,
			max: niceCeil(Math.max(...rs.map((r) => Number(r.ci95_high ?? r.mean) || 0), ...rs.map((r) => Number(r.mean) || 0)) * 1.05),
			axisLabel: { formatter: (v) => sig(v) }
		},
		series: [
			{
				name: 'mean',
				type: 'bar',
				data: rs.map((r, i) => ({ value: r.mean, itemStyle: { color: PALETTE[i % PALETTE.length] } })),
				label: { show: true, position: 'insideTop', formatter: (p) => sig(p.value), color: '#fff', fontSize: 11 }
			},
			errorBars('95% CI', rs.map((r, i) => [i, r.ci95_low ?? r.mean, r.ci95_high ?? r.mean]))
		]
	};
}

const VERDICT_COLOR = { better: '#16a34a', worse: '#dc2626', 'no meaningful difference': '#6b7280', withheld: '#d97706' };

/**
 * ECharts option: a forest plot of one comparison — per metric the change (candidate vs
 * baseline, %) with its CI, against the ± smallest-meaningful-change band; dots coloured by verdict.
 */
export function forestChart(rows) {
	const rs = asRows(rows);
	const band = 100 * Number(rs[0]?.min_change ?? 0.05);
	const cats = rs.map((r) => `${r.workload_title} — ${r.direction}`);
	const title = `Change of the candidate against the baseline (%)`;
	const span = (col) => {
		const v = rs.map((r) => Number(r[col])).filter(Number.isFinite);
		return !v.length ? '?' : Math.min(...v) === Math.max(...v) ? `${v[0]}` : `${Math.min(...v)}–${Math.max(...v)}`;
	};
	const subtitle = `ratio − 1 with its ${Math.round(100 * Number(rs[0]?.confidence ?? 0.95))}% CI per metric; shaded: ±${band}% (smallest meaningful change); withheld rows have no interval; n = ${span('n_baseline')} / ${span('n_candidate')} results per side · unit: % of the metric (${units(rs).join(', ')})`;
	const pctOf = (x) => (x == null || Number.isNaN(Number(x)) ? null : 100 * Number(x));
	// the axis holds every whisker and the band, in steps of 5%
	const ends = rs.flatMap((r) => [r.change, r.change_ci_low, r.change_ci_high]).map(pctOf).filter((v) => v != null);
	const low = Math.min(-band, ...ends) * 1.08;
	const high = Math.max(band, ...ends) * 1.08;
	const step = [5, 10, 20, 25, 50, 100, 200, 500, 1000].find((k) => (high - low) / k <= 8) ?? 1000;
	const lo = step * Math.floor(low / step);
	const hi = step * Math.ceil(high / step);
	return {
		...heading(title, subtitle),
		grid: { top: 64, left: 10, right: 24, bottom: 30, containLabel: true },
		tooltip: {
			trigger: 'item',
			formatter: (p) => {
				const r = rs[p.dataIndex];
				if (!r) return '';
				return [cats[p.dataIndex], `${r.verdict}: ${pct(r.change, { sign: true })} [${pct(r.change_ci_low, { sign: true })}, ${pct(r.change_ci_high, { sign: true })}]`,
					r.reason ? `withheld: ${r.reason}` : `p (Holm) ${pText(r.p_holm)}`,
					`occasions ${r.occasions_baseline} → ${r.occasions_candidate}`].join('<br/>');
			}
		},
		yAxis: { type: 'category', data: cats, inverse: true },
		xAxis: { type: 'value', name: '% change', nameLocation: 'middle', nameGap: 22, min: lo, max: hi, interval: step, axisLabel: { formatter: (v) => `${v}%` } },
		series: [
			{
				name: 'change',
				type: 'scatter',
				symbolSize: 11,
				data: rs.map((r) => ({ value: [pctOf(r.change), cats.indexOf(`${r.workload_title} — ${r.direction}`)], itemStyle: { color: VERDICT_COLOR[r.verdict] ?? '#6b7280' } })),
				markArea: { silent: true, itemStyle: { color: 'rgba(107,114,128,0.12)' }, data: [[{ xAxis: -band }, { xAxis: band }]] },
				markLine: { silent: true, symbol: 'none', label: { show: false }, lineStyle: { color: '#9ca3af', type: 'solid' }, data: [{ xAxis: 0 }] }
			},
			errorBars('CI', rs.map((r, i) => [i, pctOf(r.change_ci_low), pctOf(r.change_ci_high)]).filter((d) => d[1] != null && d[2] != null), true)
		]
	};
}

/**
 * The overview's verdict banner: per campaign and storage class with a candidate run
 * (role comparisons), which headline metrics got worse, by how much, with what confidence, and
 * how many occasions and runs stand behind each side.
 */
export function verdictBanners(rows) {
	const rs = asRows(rows).filter((r) => r.kind === 'role');
	return panels(rs, ['campaign', 'storage_class']).map((p) => {
		const mine = rowsOf(rs, p, ['campaign', 'storage_class']);
		const worse = mine.filter((r) => r.verdict === 'worse');
		const better = mine.filter((r) => r.verdict === 'better');
		const withheld = mine.filter((r) => r.verdict === 'withheld');
		const sides = `baseline: ${p.occasions_baseline} occasion(s) in ${p.runs_baseline} run(s); candidate: ${p.occasions_candidate} occasion(s) in ${p.runs_candidate} run(s)`;
		const lines = worse.map((r) => `${r.workload_title} — ${r.direction}: ${pct(r.change, { sign: true })} [${pct(r.change_ci_low, { sign: true })}, ${pct(r.change_ci_high, { sign: true })}], p (Holm) ${pText(r.p_holm)}`);
		const status = worse.length ? 'negative' : withheld.length === mine.length ? 'warning' : 'positive';
		const headline = worse.length
			? `${p.storage_class} (${p.campaign}): the candidate is worse in ${worse.length} of ${mine.length} headline metrics`
			: withheld.length === mine.length
				? `${p.storage_class} (${p.campaign}): no verdict yet — ${withheld[0]?.reason ?? 'too few occasions'}`
				: `${p.storage_class} (${p.campaign}): the candidate is not worse in any of ${mine.length - withheld.length} judged headline metrics` + (better.length ? ` (better in ${better.length})` : '');
		return { campaign: p.campaign, storage_class: p.storage_class, status, headline, lines, sides,
			confidence: `${Math.round(100 * Number(p.confidence ?? 0.95))}% CIs, Holm at α = ${p.alpha}, smallest meaningful change ${pct(p.min_change)}` + (withheld.length && withheld.length < mine.length ? `; ${withheld.length} withheld` : '') };
	});
}

/** Which class is faster: one banner per campaign and pair of classes (report_comparisons of kind
 * storage_class), counting the judged headline metrics each class is better in. */
export function classBanners(rows) {
	const rs = asRows(rows).filter((r) => r.kind === 'storage_class');
	return panels(rs, ['campaign', 'baseline', 'candidate']).map((p) => {
		const mine = rowsOf(rs, p, ['campaign', 'baseline', 'candidate']);
		const judged = mine.filter((r) => r.verdict !== 'withheld');
		const cand = judged.filter((r) => r.verdict === 'better').length;
		const base = judged.filter((r) => r.verdict === 'worse').length;
		const of = `of ${judged.length} judged headline metrics`;
		let headline;
		if (!judged.length) headline = `${p.baseline} or ${p.candidate} (${p.campaign}): no verdict yet — ${mine[0]?.reason ?? 'too few occasions'}`;
		else if (cand && !base) headline = `${p.candidate} is faster than ${p.baseline} (${p.campaign}): better in ${cand} ${of}, worse in none`;
		else if (base && !cand) headline = `${p.baseline} is faster than ${p.candidate} (${p.campaign}): better in ${base} ${of}, worse in none`;
		else if (cand || base) headline = `${p.candidate} against ${p.baseline} (${p.campaign}): ${p.candidate} better in ${cand}, ${p.baseline} better in ${base} ${of}`;
		else headline = `${p.candidate} against ${p.baseline} (${p.campaign}): no meaningful difference in ${judged.length} judged headline metrics`;
		const occasions = `${p.baseline}: ${p.occasions_baseline} occasion(s); ${p.candidate}: ${p.occasions_candidate} occasion(s)`;
		return { campaign: p.campaign, status: judged.length ? 'info' : 'warning', headline, occasions,
			confidence: `${Math.round(100 * Number(p.confidence ?? 0.95))}% CIs, Holm at α = ${p.alpha}, smallest meaningful change ${pct(p.min_change)}` + (judged.length < mine.length ? `; ${mine.length - judged.length} withheld` : '') };
	});
}

/** Multi-client scaling (report_scaling): one panel per workload family and direction. */
export function scalingPanels(rows) {
	const out = [];
	for (const r of asRows(rows)) {
		const key = `${r.wl_group}|${r.direction}`;
		if (!out.some((p) => p.key === key)) {
			out.push({ key, group: r.wl_group, direction: r.direction, title: `${r.wl_group} — ${r.direction}` });
		}
	}
	return out;
}

/** The rows of one scaling panel, every class's points in client order, with the CI as text. */
export function scalingRows(rows, group, direction) {
	return asRows(rows)
		.filter((r) => r.wl_group === group && r.direction === direction)
		.map((r) => ({
			...r,
			clients_label: `${r.clients}`,
			ci95: interval(r.ci95_low, r.ci95_high, r.iops),
			iops_s: sig(r.iops)
		}))
		.sort((a, b) => a.clients - b.clients || String(a.storage_class).localeCompare(String(b.storage_class)));
}
