"""An agent that remembers Chinese text gets an id in Chinese, and every tool that takes an id
takes it: read, recall's hits, links, read_many, update."""

from __future__ import annotations

from pathlib import Path

from mcp import ClientSession
from mcp_client import call, serve


def test_a_memory_remembered_in_chinese_goes_by_a_chinese_id(vault_path: Path) -> None:
    async def scenario(session: ClientSession) -> None:
        added = await call(session, "remember", text="黄山的日出非常壮观，要早上五点出发。", title="黄山日出")
        assert added["id"].startswith("黄山日出-") and added["path"].endswith(f"/{added['id']}.md")
        whole = await call(session, "read", id=added["id"])
        assert whole["frontmatter"]["id"] == added["id"] and "五点出发" in whole["body"]
        found = await call(session, "recall", query="黄山日出", mode="keyword")
        assert found["results"][0]["id"] == added["id"]
        plan = await call(session, "remember", text=f"行程：先看 [[{added['id']}]]，再下山。", title="行程")
        back = await call(session, "links", id=added["id"])
        assert [x["source"]["path"] for x in back["backlinks"]] == [plan["path"]]
        many = await call(session, "read_many", ids=[added["id"], plan["id"]])
        assert [n["path"] for n in many["notes"]] == [added["path"], plan["path"]]
        updated = await call(session, "update", id=added["id"], append="记得带外套。", reason="补充")
        assert updated["changed"] == ["body"]

    serve(vault_path, scenario)
