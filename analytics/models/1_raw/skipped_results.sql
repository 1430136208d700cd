-- skipped_results: result.json documents under the selected prefix that were not counted, and why:
-- invalid (empty, truncated, not a result document, values the schema refuses), other-schema
-- (another schema_version), duplicate (a copy of a cell already counted: counted_as is that key).
-- Filled by the runner (pvbench.analytics.runner.select_documents); empty when every document counted.
select source_key, problem, reason, counted_as
from skipped_results_input
order by source_key
