"""Regenerate t_critical.csv: two-sided 95% Student t critical values, df 1..1000.

DuckDB has no t quantile function; a seed table (dbt-style) keeps the SQL plain.
Run: python analytics/seeds/make_t_critical.py > analytics/seeds/t_critical.csv
"""

from scipy import stats

print("df,t975")
for df in range(1, 1001):
    print(f"{df},{stats.t.ppf(0.975, df):.6f}")
