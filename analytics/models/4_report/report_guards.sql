-- report_guards: the guards (the methodology page), as the catalog defines them (guard_catalog,
-- exported from pvbench.cells.guards): title, threshold and its unit, which way a tripped guard
-- biases the measurement, whether its flag leaves a result out by default and in this aggregation
-- (getvariable('keep_flagged')), and how many results it flagged in the data.
select
    c.guard_order, c.rule, c.title, c.threshold, c.unit, c.bias, c.description,
    c.excluded as excluded_by_default,
    c.excluded and not list_contains(getvariable('keep_flagged'), c.rule) as excluded,
    coalesce(n.n_flagged, 0) as n_flagged
from guard_catalog c
left join (select rule, count(*) as n_flagged from report_flagged_cells group by rule) n using (rule)
order by c.guard_order
