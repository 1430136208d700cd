-- settings: the statistics' settings (seed stats_settings: name, value, meaning), one row with a
-- column per setting, so every later model reads e.g. settings.outlier_alpha instead of pivoting
-- the seed itself. pvbench.stats.tables.load_settings reads the same seed for `pvbench compare`.
pivot (select name, value from stats_settings) on name using any_value(value)
