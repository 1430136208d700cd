#!/usr/bin/env node
// pvbench: make Evidence's Universal SQL work air-gapped (postinstall step, idempotent).
//
// Why: @evidence-dev/universal-sql runs DuckDB-wasm, which has no built-in Parquet reader.
// Its first read_parquet()/COPY ... (FORMAT PARQUET) makes DuckDB-wasm download the parquet
// extension from extensions.duckdb.org. Offline, `evidence sources`, `evidence build` and the
// built site in the browser then hang. pvbench users run air-gapped clusters, so the report
// must never touch the internet.
//
// How: Parquet is read and written with parquet-wasm (already installed: it is a dependency
// of universal-sql) and handed to DuckDB-wasm as Arrow IPC, which DuckDB-wasm ingests natively:
//   - build-parquet.js   (evidence sources): merge the batch files with parquet-wasm instead of
//                         DuckDB's COPY; a query with 0 rows still yields an (empty) table.
//   - client-duckdb/node.js    (SSR during evidence build): load each table via parquet-wasm.
//   - client-duckdb/browser.js (built site): fetch the .parquet file, decode it with parquet-wasm
//                         (its wasm is bundled by Vite, like DuckDB's own wasm), insert as Arrow.
//   - both clients switch DuckDB's extension auto-install/auto-load off, so anything else that
//     would need a download fails at once with an error instead of hanging.
//
// Every replaced snippet must match the installed upstream code exactly once; if
// universal-sql changes, this script exits non-zero and `npm ci` fails (loudly, on purpose).
// Re-check the snippets below when bumping @evidence-dev/evidence.

import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { replaceOnce as replaceOnceIn } from './replace-once.mjs';

const MARKER = 'pvbench-offline-parquet v2';
const EXPECTED_USQL = '3.0.1';

const projectDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function fail(msg) {
	console.error(`\n[pvbench offline-parquet] ERROR: ${msg}\n`);
	console.error(
		'The air-gapped Parquet patch for @evidence-dev/universal-sql could not be applied.\n' +
			'Without it, Evidence downloads the DuckDB parquet extension from the internet and hangs\n' +
			'offline. Update reports/scripts/offline-parquet.mjs for the installed version.'
	);
	process.exit(1);
}

/** Every installed copy of universal-sql (normally one, hoisted). */
function findUsqlCopies(dir, out = []) {
	let entries;
	try {
		entries = readdirSync(dir, { withFileTypes: true });
	} catch {
		return out;
	}
	for (const e of entries) {
		if (!e.isDirectory()) continue;
		const sub = path.join(dir, e.name);
		if (e.name === '@evidence-dev') {
			const pkg = path.join(sub, 'universal-sql', 'package.json');
			if (existsSync(pkg)) out.push(path.dirname(pkg));
		}
		if (e.name.startsWith('@') || e.name === 'node_modules') findUsqlCopies(sub, out);
		else if (existsSync(path.join(sub, 'node_modules'))) findUsqlCopies(path.join(sub, 'node_modules'), out);
	}
	return out;
}

const usqlDirs = findUsqlCopies(path.join(projectDir, 'node_modules'));
if (!usqlDirs.length) fail('@evidence-dev/universal-sql is not installed (run npm ci in reports/ first)');
for (const usqlDir of usqlDirs) {
	const usqlPkgPath = path.join(usqlDir, 'package.json');
	const usqlVersion = JSON.parse(readFileSync(usqlPkgPath, 'utf8')).version;
	if (usqlVersion !== EXPECTED_USQL) {
		fail(`${usqlDir} is version ${usqlVersion}, the patch was written for ${EXPECTED_USQL}`);
	}
	// parquet-wasm must resolve from universal-sql (Vite and node resolve it from there)
	try {
		createRequire(usqlPkgPath).resolve('parquet-wasm/node/arrow1.js');
		createRequire(usqlPkgPath).resolve('parquet-wasm/esm/arrow1_bg.wasm');
	} catch {
		fail('parquet-wasm (node and esm builds) is not resolvable from @evidence-dev/universal-sql');
	}
}

/** Replace `from` (must occur exactly once) by `to`. */
const replaceOnce = (src, from, to, file) => replaceOnceIn(src, from, to, file, fail);

const NO_AUTOLOAD = `
		// ${MARKER}: never download extensions (fail fast instead of hanging air-gapped)
		await connection.query('SET autoinstall_known_extensions = false;');
		await connection.query('SET autoload_known_extensions = false;');
`;

const patches = {
	'src/build-parquet.js': [
		[
			`import { emptyDbFs, initDB, query } from './client-duckdb/node.js';`,
			`import { emptyDbFs, initDB } from './client-duckdb/node.js';
// ${MARKER}: Parquet via parquet-wasm, not DuckDB-wasm's downloadable extension
import { readParquet } from 'parquet-wasm/node/arrow1.js';
import { tableFromIPC, Table as ArrowTable } from 'apache-arrow';`
		],
		[
			`	if (!tmpFilenames.length) return 0;`,
			`	// ${MARKER}: a query without rows still yields a (typed, empty) table, so pages get
	// 0 rows instead of a missing table. parquet-wasm 0.5 cannot read back a Parquet file
	// without row groups, so an empty table is stored as a schema-only Arrow IPC stream (the
	// patched loaders tell the two apart by Parquet's "PAR1" magic).
	if (!tmpFilenames.length) {
		const arrowTypes = { number: Float64, string: Utf8, date: TimestampMillisecond, boolean: Bool };
		const empty = tableFromArrays(
			Object.fromEntries(
				columns.map((c) => [c.name, vectorFromArray([], new (arrowTypes[c.evidenceType] ?? Utf8)())])
			)
		);
		for (const field of empty.schema.fields) field.nullable = true;
		await fs.mkdir(outDir, { recursive: true });
		await fs.writeFile(path.join(outDir, outputFilename), tableToIPC(empty, 'stream'));
		return 0;
	}`
		],
		[
			`	const parquetFiles = tmpFilenames.map((filename) => \`'\${filename.replaceAll('\\\\', '/')}'\`);

	const select = \`SELECT * FROM read_parquet([\${parquetFiles.join(',')}])\`;
	const copy = \`COPY (\${select}) TO '\${outputFilepath}' (FORMAT 'PARQUET', CODEC 'ZSTD', USE_TMP_FILE false);\`;

	await fs.mkdir(path.dirname(outputFilepath), { recursive: true });
	await query(copy);`,
			`	// ${MARKER}: merge the batch files with parquet-wasm (was: DuckDB COPY ... FORMAT PARQUET)
	await fs.mkdir(path.dirname(outputFilepath), { recursive: true });
	if (tmpFilenames.length === 1) {
		await fs.copyFile(tmpFilenames[0], outputFilepath);
	} else {
		const batches = [];
		for (const tmpFile of tmpFilenames) {
			const wasmTable = readParquet(new Uint8Array(await fs.readFile(tmpFile)));
			batches.push(...tableFromIPC(wasmTable.intoIPCStream()).batches);
		}
		const merged = tableToIPC(new ArrowTable(batches), 'stream');
		const props = new WriterPropertiesBuilder().setCompression(Compression.ZSTD).build();
		await fs.writeFile(outputFilepath, writeParquet(Table.fromIPCStream(merged), props));
	}`
		]
	],
	'src/client-duckdb/node.js': [
		[
			`import { withTimeout } from './both.js';`,
			`import { withTimeout } from './both.js';
// ${MARKER}: Parquet via parquet-wasm, not DuckDB-wasm's downloadable extension
import { readParquet } from 'parquet-wasm/node/arrow1.js';
import { readFileSync } from 'fs';`
		],
		[
			`		await connection.query('SET old_implicit_casting = true;');
`,
			`		await connection.query('SET old_implicit_casting = true;');
${NO_AUTOLOAD}`
		],
		[
			`			db.registerFileURL(
				file_name,
				url.split(pathDelimiterRegex).join(path.sep),
				DuckDBDataProtocol.NODE_FS,
				false
			);
			connection.query(
				\`CREATE OR REPLACE VIEW "\${source}"."\${table}" AS (SELECT * FROM read_parquet('\${file_name}'));\`
			);`,
			`			// ${MARKER}: load the table from Parquet via parquet-wasm + Arrow IPC
			pvbenchLoadParquet(source, table, url.split(pathDelimiterRegex).join(path.sep));`
		],
		[
			`export { arrowTableToJSON };`,
			`export { arrowTableToJSON };

/**
 * ${MARKER}: (re)creates "schema"."table" from a local Parquet file without DuckDB's
 * parquet extension.
 * @param {string} schema
 * @param {string} table
 * @param {string} filePath
 */
function pvbenchLoadParquet(schema, table, filePath) {
	const bytes = new Uint8Array(readFileSync(filePath));
	const ipc = pvbenchIsParquet(bytes) ? readParquet(bytes).intoIPCStream() : bytes; // else: empty table as Arrow IPC
	for (const kind of ['VIEW', 'TABLE']) {
		try {
			connection.query(\`DROP \${kind} IF EXISTS "\${schema}"."\${table}";\`);
		} catch {
			// the name exists with the other kind
		}
	}
	connection.insertArrowFromIPCStream(ipc, { schema, name: table, create: true });
}

/** ${MARKER}: Parquet files start with "PAR1"; empty tables are stored as Arrow IPC instead. */
const pvbenchIsParquet = (bytes) =>
	bytes.length >= 4 && bytes[0] === 0x50 && bytes[1] === 0x41 && bytes[2] === 0x52 && bytes[3] === 0x31;`
		]
	],
	'src/client-duckdb/browser.js': [
		[
			`		await connection.query('SET old_implicit_casting = true;');
`,
			`		await connection.query('SET old_implicit_casting = true;');
${NO_AUTOLOAD}`
		],
		[
			`				await db.registerFileURL(file_name, addBasePath(path), DuckDBDataProtocol.HTTP, false);
				await connection.query(
					\`CREATE OR REPLACE VIEW "\${source}"."\${table}" AS (SELECT * FROM read_parquet('\${file_name}'));\`
				);`,
			`				// ${MARKER}: load the table from Parquet via parquet-wasm + Arrow IPC
				await pvbenchLoadParquet(source, table, addBasePath(path));`
		],
		[
			`export { arrowTableToJSON };`,
			`export { arrowTableToJSON };

/** @type {Promise<typeof import('parquet-wasm/esm/arrow1.js')> | undefined} */
let pvbenchParquetWasm;

/**
 * ${MARKER}: fetches a Parquet file (same origin) and (re)creates "schema"."table" from it
 * without DuckDB's parquet extension. parquet-wasm's wasm is bundled by Vite.
 * @param {string} schema
 * @param {string} table
 * @param {string} url
 */
async function pvbenchLoadParquet(schema, table, url) {
	pvbenchParquetWasm ??= (async () => {
		const mod = await import('parquet-wasm/esm/arrow1.js');
		const wasmUrl = (await import('parquet-wasm/esm/arrow1_bg.wasm?url')).default;
		await mod.default(wasmUrl);
		return mod;
	})();
	const { readParquet } = await pvbenchParquetWasm;
	const res = await fetch(url);
	if (!res.ok) throw new Error(\`Loading \${url} failed: HTTP \${res.status}\`);
	const bytes = new Uint8Array(await res.arrayBuffer());
	const ipc = pvbenchIsParquet(bytes) ? readParquet(bytes).intoIPCStream() : bytes; // else: empty table as Arrow IPC
	for (const kind of ['VIEW', 'TABLE']) {
		await connection
			.query(\`DROP \${kind} IF EXISTS "\${schema}"."\${table}";\`)
			.catch(() => {}); // the name exists with the other kind
	}
	await connection.insertArrowFromIPCStream(ipc, { schema, name: table, create: true });
}

/** ${MARKER}: Parquet files start with "PAR1"; empty tables are stored as Arrow IPC instead. */
const pvbenchIsParquet = (bytes) =>
	bytes.length >= 4 && bytes[0] === 0x50 && bytes[1] === 0x41 && bytes[2] === 0x52 && bytes[3] === 0x31;`
		]
	]
};

for (const usqlDir of usqlDirs) {
	let patched = 0;
	for (const [rel, steps] of Object.entries(patches)) {
		const file = path.join(usqlDir, rel);
		let src = readFileSync(file, 'utf8');
		if (src.includes(MARKER)) continue; // already patched (npm ci re-installs a pristine copy)
		if (src.includes('pvbench-offline-parquet')) {
			fail(`${rel} carries an older version of this patch; reinstall: rm -rf node_modules && npm ci`);
		}
		for (const [from, to] of steps) src = replaceOnce(src, from, to, rel);
		writeFileSync(file, src);
		patched++;
	}
	// Sanity check: no read_parquet/registerFileURL left in the clients
	for (const rel of Object.keys(patches)) {
		const src = readFileSync(path.join(usqlDir, rel), 'utf8');
		if (!src.includes(MARKER)) fail(`${rel} is not patched`);
		if (/read_parquet\(|registerFileURL\(/.test(src)) fail(`${rel} still reads Parquet through DuckDB`);
	}
	console.log(
		`[pvbench offline-parquet] ${path.relative(projectDir, usqlDir)} ${EXPECTED_USQL}: ` +
			(patched ? `patched ${patched} file(s)` : 'already patched') +
			' (Parquet via parquet-wasm, no extension downloads)'
	);
}
