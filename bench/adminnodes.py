"""The node ids a scheduler lists, through /admin/nodes pages (limit 10,000, cursor). Imported by
bench/restart-check.py and bench/replicas-agree.py."""
import json
import urllib.parse
import urllib.request


def node_ids(admin, query=""):
    """Returns the ids of every node ADMIN (http://host:port) lists, QUERY ("routable=true&") narrowing."""
    ids, cursor = set(), None
    while True:
        url = admin + "/admin/nodes?" + query + "limit=10000" + ("&cursor=" + urllib.parse.quote(cursor) if cursor else "")
        page = json.load(urllib.request.urlopen(url, timeout=60))
        ids.update(n["nodeId"] for n in page["nodes"])
        cursor = page.get("cursor")
        if not cursor:
            return ids
