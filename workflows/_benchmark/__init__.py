"""The parts of ``workflows/benchmark.py``: one module per template (or per small group of them).

Not rendered on their own (render skips ``workflows/_*``): ``benchmark.py`` composes them into the
WorkflowTemplate ``pvbench-benchmark``. Each template is a function that declares it in the active
Hera context and returns it, so that the WorkflowTemplate lists its templates in the order they
are called. Tasks that call a template object need that context (Hera adds their templates to
the workflow), so the DAGs take the templates they call as arguments.

- ``common``: placeholders, pod settings, resources, retries, shared arguments (one place)
- ``parameters``: the run's parameters, from the profile catalog
- ``volumes``: /tmp, the API token volume, a cell's fresh PVC, the shared claim's create/delete steps
- ``fio``: what every fio pod of a cell shares (inputs, store key, arguments, node selection)
- ``prepare``: validate, expand
- ``cell``: benchmark-cell (a one-pod cell)
- ``clients``: a multi-client cell (barrier, clients, merge and its two DAGs)
- ``fan_out``: the cells' fan-out tasks, in main and in every adaptive round
- ``adaptive``: adaptive-check and the recursive adaptive DAG
- ``main``: the entrypoint DAG
- ``publish``: aggregate, report and their DAG under the campaign's mutex
- ``finish``: the exit handler (cleanup, then publish)
"""
