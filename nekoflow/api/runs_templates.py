"""HTML of the runs page (server-rendered, no build step): ``string.Template`` skeletons whose
values are escaped by the page module before substitution."""

from __future__ import annotations

from string import Template

STYLE = """
body{font-family:system-ui,sans-serif;margin:1.2rem;color:#222}
h1{font-size:1.3rem}h2{font-size:1.1rem;margin-top:1.4rem}
table{border-collapse:collapse;width:100%;font-size:.9rem}
th,td{border-bottom:1px solid #ddd;padding:.3rem .45rem;text-align:left;vertical-align:top}
th{background:#f4f4f4}
code,.id{font-family:ui-monospace,monospace;word-break:break-all}
.status-done{color:#176f2c}.status-failed{color:#b00020;font-weight:600}
.status-skipped,.status-superseded{color:#777}.status-running,.status-queued{color:#8a5a00}
form.filters{display:flex;gap:.5rem;flex-wrap:wrap;align-items:end;margin:.6rem 0}
form.filters label{display:flex;flex-direction:column;font-size:.8rem}
.reason{color:#b00020}.muted{color:#777}
"""

PAGE = Template(
    """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>$title · nekoflow</title><style>$style</style></head>
<body>
<nav><a href="/runs">runs</a>$logout</nav>
$body
</body></html>
"""
)

LOGOUT = (
    ' · <form method="post" action="/runs/logout" style="display:inline">'
    '<button type="submit" id="logout">log out</button></form>'
)

LOGIN = Template(
    """<h1>nekoflow runs</h1>
<p>This server requires its API token (<code>NEKOFLOW_API_TOKEN</code>) to show runs.</p>
$error
<form method="post" action="/runs/login">
<input type="hidden" name="next" value="$next">
<label>API token <input type="password" name="token" id="token" autocomplete="current-password"
 required></label>
<button type="submit" id="login">Log in</button>
</form>"""
)

LIST = Template(
    """<h1>Recent turns</h1>
<form class="filters" method="get" action="/runs" id="filters">
<label>channel <input name="channel" id="f-channel" value="$channel"></label>
<label>character (id or name) <input name="character" id="f-character" value="$character"></label>
<label>scope (trailing * = prefix) <input name="scope" id="f-scope" value="$scope"></label>
<label>status <select name="status" id="f-status">$status_options</select></label>
<label>limit
 <input name="limit" id="f-limit" type="number" min="1" max="500" value="$limit"></label>
<button type="submit" id="apply">Filter</button> <a href="/runs" id="clear">clear</a>
</form>
$notice
<p class="muted" id="count">$count</p>
<table id="runs"><thead><tr>
<th>turn</th><th>created (UTC)</th><th>channel</th><th>character</th><th>scope</th>
<th>status</th><th>stages</th><th>model</th><th>LLM ms</th><th>tokens</th>
<th>world book</th><th>memories</th><th>delivery</th>
</tr></thead><tbody>
$rows
</tbody></table>"""
)

ROW = Template(
    """<tr data-turn="$turn_id" data-status="$status">
<td><a class="id turn-link" href="/runs/$turn_id">$turn_id</a></td><td>$created</td>
<td><a href="$channel_link">$channel</a></td><td>$character</td>
<td><a class="id scope-link" href="$scope_link">$scope</a></td>
<td class="status-$status">$status$reason</td><td>$stages</td><td>$model</td><td>$latency</td>
<td>$tokens</td><td>$injected</td><td>$memories</td><td>$delivery</td>
</tr>"""
)

DETAIL = Template(
    """<h1>Turn <span class="id" id="turn-id">$turn_id</span></h1>
<table id="summary"><tbody>
<tr><th>status</th><td class="status-$status" id="status">$status</td></tr>
<tr><th>reason</th><td class="reason" id="reason">$reason</td></tr>
<tr><th>channel</th><td><a href="$channel_link">$channel</a></td></tr>
<tr><th>character</th><td>$character</td></tr>
<tr><th>scope</th><td><a class="id scope-link" href="$scope_link">$scope</a></td></tr>
<tr><th>created · started · finished (UTC)</th><td>$times</td></tr>
<tr><th>model</th><td id="model">$model</td></tr>
<tr><th>LLM</th><td>$llm</td></tr>
<tr><th>delivery</th><td id="delivery">$delivery</td></tr>
</tbody></table>
<h2>Stages</h2>
<table id="stages"><thead><tr><th>stage</th><th>done at (UTC)</th><th>seconds</th>
<th>executions</th></tr></thead><tbody>
$stages
</tbody></table>
<h2>World-book entries injected</h2>
<ul id="injected">$injected</ul>
<h2>Memories in the prompt</h2>
<p id="memories">$memories</p>"""
)
