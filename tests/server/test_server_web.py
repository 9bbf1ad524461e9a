"""What `shoal up` serves a browser (`shoal.server.web`): the dashboard's page at `/` and
every file it loads, and the API documentation at `/docs` and `/redoc`, whose pages name
no outside URL (an air-gapped cluster's browser could load none) and whose assets come from
the server. The dashboard itself is driven in a real browser by
tests/e2e/test_dashboard_browser.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from server_helpers import StoreScheduler
from store_templates import migrated_sqlite

from shoal.server import create_app
from shoal.server.web import BUNDLE
from shoal.store import Repository

# An absolute http(s) URL in a page or script tag: none may be loaded from outside.
OUTSIDE = re.compile(r"""(?:src|href)\s*=\s*["']?(https?:)?//""", re.IGNORECASE)
LOADED = re.compile(r"""(?:src|href)=["']([^"']+)["']""")
IMPORTED = re.compile(r"""^import [^"']+ from ["'](\.[^"']+)["'];$""", re.MULTILINE)


@pytest.fixture(scope="module")
def client(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[TestClient]:
    """One app for the module: these files do not depend on what is stored."""
    store = migrated_sqlite(sqlite_template, tmp_path_factory.mktemp("web") / "shoal.db")
    repository = Repository(store)
    with TestClient(create_app(repository, StoreScheduler(repository))) as opened:
        yield opened
    store.close()


def loads(client: TestClient, page: str) -> list[str]:
    answer = client.get(page)
    assert answer.status_code == 200, answer.text
    assert not OUTSIDE.search(answer.text), f"{page} loads from outside: {answer.text}"
    found = [url for url in LOADED.findall(answer.text) if not url.startswith("#")]
    found += re.findall(r"""(?:url|spec-url)\s*[:=]\s*['"](/[^'"]+)['"]""", answer.text)
    return found


def test_docs_and_redoc_load_nothing_from_outside(client: TestClient) -> None:
    for page, expected in (("/docs", "swagger-ui-bundle.js"), ("/redoc", "redoc.standalone.js")):
        assets = loads(client, page)
        assert any(a.endswith(expected) for a in assets), assets
        for asset in assets:
            answer = client.get(asset)
            assert answer.status_code == 200, asset
            assert len(answer.content) > 100, asset
    assert "/openapi.json" in loads(client, "/docs")
    # Swagger UI's validator badge would ask an outside service: it is off.
    assert '"validatorUrl": null' in client.get("/docs").text


def test_the_dashboard_and_every_file_it_loads_are_served(client: TestClient) -> None:
    page = client.get("/")
    assert page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assets = loads(client, "/")
    assert "/dashboard/js/app.js" in assets and "/dashboard/dashboard.css" in assets
    scripts = [a for a in assets if a.endswith(".js")]
    seen: set[str] = set()
    while scripts:  # every module imports siblings that exist and are served as JavaScript
        script = scripts.pop()
        if script in seen:
            continue
        seen.add(script)
        answer = client.get(script)
        assert answer.status_code == 200, script
        assert "javascript" in answer.headers["content-type"], answer.headers
        assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", answer.text), script
        base = script.rsplit("/", 1)[0]
        scripts += [f"{base}/{name.removeprefix('./')}" for name in IMPORTED.findall(answer.text)]
    on_disk = {f"/dashboard/{p.relative_to(BUNDLE)}" for p in Path(BUNDLE).rglob("*.js")}
    assert seen == on_disk, "a module is not imported by the page, or is missing"
    for asset in assets:
        assert client.get(asset).status_code == 200, asset


def test_the_dashboard_never_writes_api_data_as_html(client: TestClient) -> None:
    """Everything the API returns goes into the page as text (`dom.js`'s `h`), never
    through innerHTML or document.write."""
    for path in Path(BUNDLE).rglob("*.js"):
        text = path.read_text()
        for unsafe in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
            assert unsafe not in text, f"{path.name} uses {unsafe}"


def test_a_missing_dashboard_file_is_a_json_404(client: TestClient) -> None:
    answer = client.get("/dashboard/js/nothing.js")
    assert answer.status_code == 404
    assert answer.json()["errors"][0]["message"]
    assert client.get("/dashboard/../app.py").status_code == 404
