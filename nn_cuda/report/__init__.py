"""`python -m nn_cuda.report`: figures and REPORT.md from the benchmarks' JSON files.

    inputs.py    find and check the JSON files (runs/ by default, results/ with --update)
    numbers.py   the series and tables the report shows, read from them
    figures.py   one matplotlib figure per section (Agg backend, PNG)
    markdown.py  REPORT.md
    doc_tables.py  the result tables of README.md and docs/*.md (--docs)
"""
