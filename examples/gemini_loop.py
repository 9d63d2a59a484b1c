"""contextfold in a hand-written agent loop on Google Gemini (google-genai).

    python3 -m pip install -e '.[gemini]'
    export GOOGLE_API_KEY=...     # or, offline: contextfold serve-fake --provider gemini, export GOOGLE_GEMINI_BASE_URL=...
    python3 examples/gemini_loop.py [FOLDER]

The same loop as ``anthropic_loop.py`` with ``provider="gemini"``:
``context.prepare()`` gives ``contents``, ``system_instruction`` and ``tools``,
the first for ``generate_content`` and the others for its config. Gemini's
function calls carry no id; contextfold gives each one its own, and a
function response names the call it answers by that id (the id is not sent).
"""

from __future__ import annotations

from google import genai
from google.genai import errors, types
from project_tools import DESCRIPTIONS, SCHEMAS, SYSTEM, TASK, call_tool, model_access

from contextfold import Context, Storage

MODEL = "gemini-2.5-flash"
TOOLS = [{"function_declarations": [
    {"name": name, "description": DESCRIPTIONS[name], "parameters_json_schema": SCHEMAS[name]} for name in SCHEMAS
]}]


def generate(client: genai.Client, request: dict) -> types.GenerateContentResponse:
    config = types.GenerateContentConfig(system_instruction=request.get("system_instruction"), tools=request.get("tools"))
    return client.models.generate_content(model=MODEL, contents=request["contents"], config=config)


def main() -> None:
    model_access("gemini")
    client = genai.Client()
    context = Context(MODEL, provider="gemini", storage=Storage(transcript=".contextfold"))
    context.add([{"role": "user", "parts": [{"text": TASK}]}], system=SYSTEM, tools=TOOLS)
    while True:
        request = context.prepare()  # {"contents", "system_instruction", "tools"}
        try:
            response = generate(client, request)
        except errors.ClientError as error:
            retry = context.retry_request(error)  # "input token count exceeds the maximum": compact once and retry
            if retry is None:
                raise
            response = generate(client, retry)
        items = context.add_response(response)
        calls = [call for item in items for call in item.tool_calls]
        if not calls:
            break
        context.add([{"role": "user", "parts": [
            {"function_response": {"id": call.id, "name": call.name, "response": {"result": call_tool(call.name, call.arguments)}}}
            for call in calls
        ]}])
    print(response.text)
    print(context.stats())


if __name__ == "__main__":
    main()
