// pvbench: Evidence merges this into its SvelteKit config (.evidence/template/svelte.config.js).
//
// SvelteKit fails a build in which a prerendered dynamic route has no page ("marked as
// prerenderable, but were not prerendered because they were not found while crawling"). With no
// storage class in the data (a campaign whose every cell failed; the empty tables of `pvbench report
// prime`) nothing links to /storage-classes/<class>/, so the report could not be built at all.
// One more entry, a name no storage class can have (not DNS-1123), gives that route a page in
// every build: it says there are no results for it.
//
// paths.relative (Evidence sets it false): the prerendered pages load their scripts, styles and
// data by relative URLs, and SvelteKit's base is, in the browser, the prefix the page was opened
// under; with reports/scripts/relative-base.mjs (Evidence's addBasePath uses that base), one
// build works from any path prefix: the web root, the Argo UI's artifact view, an S3 website, an
// ingress sub-path. No deployment.basePath in evidence.config.yaml: the prefix is found at run time.
export default {
	kit: {
		paths: {
			relative: true
		},
		prerender: {
			entries: ['*', '/storage-classes/_none/']
		}
	}
};
