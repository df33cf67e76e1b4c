"""spark_loader: benchmark data sets generated with PySpark and loaded into PostgreSQL.

Data sets: Wisconsin relations (``wisconsin``, ``tenk``, ``hundredk``, ``synthetic20``),
TPC-H (``tpch``, rows identical to dbgen's) and the partitioned R, S, T of the STAIRs
paper (``rst``).  Each table is cut into parts; one Spark task per part generates its
rows and streams them into ``COPY`` on a staging table; the driver then adds keys and
indexes, runs ``ANALYZE`` and swaps the staging table in within one transaction.

Command line: ``python -m spark_loader --help``.  From Python::

    from spark_loader.cli import main, run
    report = run(["tenk", "--dsn", dsn])          # a Report, or LoaderError
    exit_code = main(["tpch", "--sf", "0.01"])    # prints like the CLI

Module map (executor-side modules do no work at import time)::

    cli        argparse front end, report printing          driver
    loader     orchestration and phases                     driver
    pg         connecting, planning, staging, swap          driver
    datasets   table specs, naming, splitting into parts    driver
    session    the SparkContext and its explicit settings   driver
    progress   stderr progress display                      driver
    tasks      one part: COPY into staging + ledger         executor
    wisconsin, rst, tpch, permutation   row generators      executor
    checksum   CRC-32 of a table from its parts' CRCs       both
    errors     exceptions whose message is for the user     both
    bench_tpch TPC-H SF 1 against plain COPY                driver

Documentation: docs/spark_loader.md.
"""

__version__ = "0.1.0"
