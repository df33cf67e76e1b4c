"""docker-compose.yml, checked statically (there is no Docker engine on the
project's machines): valid YAML, the services the benchmark needs, build
contexts and Dockerfiles that exist, sane ports and settings."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "docker-compose.yml"


def _compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_compose_is_valid_yaml_with_the_services():
    """The file parses and names PostgreSQL, a Spark master and worker, and the
    benchmark driver."""
    doc = _compose()
    assert isinstance(doc, dict)
    assert {"postgres", "spark-master", "spark-worker", "bench"} <= set(doc["services"])


def test_every_build_context_and_dockerfile_exists():
    """Every build context is a directory of the repository holding the
    Dockerfile it names, and what the Dockerfiles COPY exists in the context."""
    for name, service in _compose()["services"].items():
        build = service.get("build")
        assert build is not None, f"{name}: no build (every image is built from the repo)"
        if isinstance(build, str):
            build = {"context": build}
        context = (ROOT / build["context"]).resolve()
        assert context.is_dir(), name
        assert context == ROOT or ROOT in context.parents, f"{name}: context outside the repo"
        dockerfile = context / build.get("dockerfile", "Dockerfile")
        assert dockerfile.is_file(), f"{name}: {dockerfile} missing"
        for line in dockerfile.read_text().splitlines():
            if line.startswith("COPY "):
                for src in line.split()[1:-1]:
                    assert (context / src).exists(), f"{name}: COPY {src} not in the context"


def test_postgres_service_preloads_eddy():
    """The PostgreSQL image is 15 with eddy built without assertions and preloaded;
    the benchmark waits for its health check."""
    doc = _compose()
    pg = doc["services"]["postgres"]
    dockerfile = (ROOT / pg["build"]["context"] / pg["build"]["dockerfile"]).read_text()
    assert "FROM postgres:15" in dockerfile
    assert "shared_preload_libraries=eddy" in dockerfile
    assert "EDDY_ASSERT=1" not in dockerfile
    assert "healthcheck" in pg
    assert doc["services"]["bench"]["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_ports_and_spark_wiring():
    """Published ports are valid host:container pairs; the worker and the
    benchmark use the master's URL and the database service by name."""
    doc = _compose()
    for name, service in doc["services"].items():
        for port in service.get("ports", []):
            *_, host, container = str(port).split(":")
            assert 0 < int(host) < 65536 and 0 < int(container) < 65536, (name, port)
    master = doc["services"]["spark-master"]["command"]
    assert "org.apache.spark.deploy.master.Master" in master and "7077" in master
    worker = doc["services"]["spark-worker"]["command"]
    assert "spark://spark-master:7077" in worker
    bench = doc["services"]["bench"]["command"]
    assert bench[:3] == ["python", "-m", "eddytools.bench"]
    assert bench[bench.index("--master") + 1] == "spark://spark-master:7077"
    assert "host=postgres" in bench[bench.index("--dsn") + 1]
