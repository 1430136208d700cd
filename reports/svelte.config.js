// pvbench: Evidence merges this into its SvelteKit config (.evidence/template/svelte.config.js).
//
// SvelteKit fails a build in which a prerendered dynamic route has no page ("marked as
// prerenderable, but were not prerendered because they were not found while crawling"). With no
// storage class in the data (a campaign whose every cell failed; the empty tables of `pvbench report
// prime`) nothing links to /storage-classes/<class>/, so the report could not be built at all.
// One more entry, a name no storage class can have (not DNS-1123), gives that route a page in
// every build: it says there are no results for it.
export default {
	kit: {
		prerender: {
			entries: ['*', '/storage-classes/_none/']
		}
	}
};
