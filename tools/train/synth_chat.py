#!/usr/bin/env python3
"""Synthetic conversations for the shipped test models, written by our own code.

Each conversation is OpenAI-shaped (messages, optional tools) and rendered with the real
Qwen3 chat template (the one in tests/data/models/tiny-qwen3/tokenizer_config.json, the same
the trained tokenizer ships), so the models learn exactly the text that `gufo render-template`
produces: multi-turn chat, <think> blocks, tool definitions with <tool_call> answers and
<tool_response> turns, and JSON answers to schemas. Used by build_corpus.py; on its own:

    python3 tools/train/synth_chat.py --count 5 --seed 1     # prints rendered samples
"""

import argparse
import json
import random
import re
import sys
from pathlib import Path

import jinja2
import jinja2.sandbox

REPO_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE_SOURCE = REPO_ROOT / "tests" / "data" / "models" / "tiny-qwen3" / "tokenizer_config.json"


def chat_template():
    """The Qwen3 chat template text (Qwen's published tokenizer_config.json, via the test data)."""
    return json.loads(TEMPLATE_SOURCE.read_text())["chat_template"]


def _tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    # As transformers' chat-template environment defines it (no HTML escaping).
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def make_renderer():
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = _tojson
    template = env.from_string(chat_template())

    def render(messages, tools=None, add_generation_prompt=False, enable_thinking=True):
        return template.render(messages=messages, tools=tools, add_generation_prompt=add_generation_prompt,
                               enable_thinking=enable_thinking)
    return render


# --------------------------------------------------------------------------- vocabulary

CITIES = ["Paris", "Berlin", "Lisbon", "Madrid", "Rome", "Oslo", "Vienna", "Prague", "Dublin", "Warsaw",
          "Athens", "Helsinki", "Tokyo", "Osaka", "Seoul", "Sydney", "Toronto", "Chicago", "Denver",
          "Boston", "Nairobi", "Cairo", "Lima", "Quito", "Santiago", "Montreal", "Zurich", "Geneva",
          "Munich", "Hamburg", "Lyon", "Porto", "Seville", "Milan", "Naples", "Krakow", "Tallinn",
          "Riga", "Vilnius", "Bergen", "Reykjavik", "Edinburgh", "Cardiff", "Brussels", "Amsterdam"]
NAMES = ["Alice", "Bob", "Carla", "David", "Elena", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kemal",
         "Lena", "Marta", "Nils", "Olga", "Pablo", "Quinn", "Rosa", "Sami", "Tomas", "Ursula", "Viktor",
         "Wanda", "Ximena", "Yusuf", "Zoe", "Amara", "Bruno", "Chiara", "Dmitri", "Esther", "Felix"]
JOBS = ["engineer", "teacher", "nurse", "baker", "pilot", "designer", "farmer", "chemist", "librarian",
        "carpenter", "musician", "translator", "doctor", "lawyer", "gardener", "photographer"]
DIRS = ["/home/user", "/var/log", "/etc", "/tmp", "/srv/data", "/opt/app", "~/projects", "~/docs",
        "/usr/share/doc", "/var/lib", "./src", "./tests", "~/music", "/mnt/backup"]
EXTS = ["txt", "log", "conf", "md", "py", "c", "json", "csv", "sh", "html", "yaml"]
WORDS = ["report", "notes", "config", "backup", "draft", "summary", "data", "server", "budget",
         "invoice", "todo", "readme", "schedule", "results", "plan", "list", "photos", "archive"]
LANGS = ["French", "German", "Spanish", "Italian", "Portuguese", "Dutch", "Swedish", "Polish"]
TIMEZONES = ["Europe/Paris", "Europe/Berlin", "America/New_York", "Asia/Tokyo", "UTC",
             "Australia/Sydney", "America/Chicago", "Europe/Lisbon", "Asia/Seoul", "Africa/Cairo"]
UNITS = [("km", "miles", 0.621371), ("miles", "km", 1.609344), ("kg", "pounds", 2.204623),
         ("pounds", "kg", 0.453592), ("liters", "gallons", 0.264172), ("meters", "feet", 3.28084),
         ("feet", "meters", 0.3048), ("celsius", "fahrenheit", None)]
CONDITIONS = ["sunny", "cloudy", "light rain", "heavy rain", "snow", "fog", "windy", "clear", "overcast"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]
SYSTEM_PROMPTS = ["You are a helpful assistant.", "You are a concise assistant.",
                  "You are Gufo, a small local assistant.", "You are a helpful assistant. Answer briefly.",
                  "You help people use the command line on Debian."]

# --------------------------------------------------------------------------- tools


def _fn(name, description, properties, required):
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": required}}}


def _s(description, enum=None):
    prop = {"type": "string", "description": description}
    if enum:
        prop["enum"] = enum
    return prop


def _n(description, kind="number"):
    return {"type": kind, "description": description}


TOOLS = {
    "get_weather": _fn("get_weather", "Get the current weather in a city",
                       {"city": _s("The city name"), "unit": _s("Temperature unit", ["celsius", "fahrenheit"])},
                       ["city"]),
    "get_time": _fn("get_time", "Get the current local time in a time zone",
                    {"timezone": _s("An IANA time zone such as Europe/Paris")}, ["timezone"]),
    "search_files": _fn("search_files", "Find files whose name matches a pattern",
                        {"pattern": _s("A glob pattern such as *.log"), "directory": _s("Where to search")},
                        ["pattern"]),
    "read_file": _fn("read_file", "Read a text file", {"path": _s("The file path")}, ["path"]),
    "list_directory": _fn("list_directory", "List the entries of a directory",
                          {"path": _s("The directory path")}, ["path"]),
    "calculate": _fn("calculate", "Evaluate an arithmetic expression",
                     {"expression": _s("The expression, e.g. 12 * (3 + 4)")}, ["expression"]),
    "convert_units": _fn("convert_units", "Convert a value from one unit to another",
                         {"value": _n("The value"), "from_unit": _s("The unit of the value"),
                          "to_unit": _s("The unit to convert to")}, ["value", "from_unit", "to_unit"]),
    "send_email": _fn("send_email", "Send an email",
                      {"to": _s("The recipient's address"), "subject": _s("The subject"),
                       "body": _s("The message")}, ["to", "subject", "body"]),
    "create_event": _fn("create_event", "Add an event to the calendar",
                        {"title": _s("What the event is"), "date": _s("The date, YYYY-MM-DD"),
                         "time": _s("The start time, HH:MM")}, ["title", "date"]),
    "translate": _fn("translate", "Translate text into another language",
                     {"text": _s("The text to translate"), "target_language": _s("The language to translate to")},
                     ["text", "target_language"]),
    "package_info": _fn("package_info", "Look up a Debian package",
                        {"name": _s("The package name")}, ["name"]),
    "run_command": _fn("run_command", "Run a shell command and return its output",
                       {"command": _s("The command line")}, ["command"]),
    "set_reminder": _fn("set_reminder", "Set a reminder",
                        {"text": _s("What to remember"), "minutes": _n("In how many minutes", "integer")},
                        ["text", "minutes"]),
}


def _file(rng):
    return f"{rng.choice(DIRS)}/{rng.choice(WORDS)}.{rng.choice(EXTS)}"


def _date(rng):
    return f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _number_text(rng):
    return rng.choice([str(rng.randint(1, 999)), f"{rng.randint(1, 99)}.{rng.randint(1, 9)}"])


def tool_case(rng, name, commands):
    """(user request, arguments, tool result, final answer) for one call of tool `name`."""
    if name == "get_weather":
        city = rng.choice(CITIES)
        unit = rng.choice(["celsius", "fahrenheit", None])
        ask = rng.choice([f"What's the weather in {city}?", f"How is the weather in {city} today?",
                          f"Is it raining in {city}?", f"Tell me the weather for {city}.",
                          f"weather {city}", f"Do I need an umbrella in {city}?"])
        if unit:
            ask = ask.rstrip("?.") + f", in {unit}?"
        args = {"city": city} | ({"unit": unit} if unit else {})
        temp = rng.randint(-5, 35) if unit != "fahrenheit" else rng.randint(25, 95)
        cond = rng.choice(CONDITIONS)
        sym = "F" if unit == "fahrenheit" else "C"
        result = {"city": city, "temperature": temp, "unit": sym, "condition": cond}
        answer = rng.choice([f"It is {temp} degrees {sym} and {cond} in {city}.",
                             f"In {city} it is currently {cond}, {temp} degrees {sym}.",
                             f"The weather in {city}: {cond}, {temp} degrees {sym}."])
        return ask, args, result, answer
    if name == "get_time":
        tz = rng.choice(TIMEZONES)
        hh, mm = rng.randint(0, 23), rng.randint(0, 59)
        ask = rng.choice([f"What time is it in {tz}?", f"Current time in {tz}, please.",
                          f"Tell me the local time for {tz}."])
        return ask, {"timezone": tz}, {"timezone": tz, "time": f"{hh:02d}:{mm:02d}"}, \
            f"It is {hh:02d}:{mm:02d} in {tz}."
    if name == "search_files":
        ext = rng.choice(EXTS)
        d = rng.choice(DIRS)
        ask = rng.choice([f"Find all .{ext} files in {d}.", f"Which {ext} files are in {d}?",
                          f"Search {d} for *.{ext}"])
        found = [f"{d}/{w}.{ext}" for w in rng.sample(WORDS, rng.randint(0, 3))]
        answer = (f"I found {len(found)} file{'s' if len(found) != 1 else ''}: {', '.join(found)}." if found
                  else f"There are no .{ext} files in {d}.")
        return ask, {"pattern": f"*.{ext}", "directory": d}, {"files": found}, answer
    if name == "read_file":
        path = _file(rng)
        ask = rng.choice([f"Show me the contents of {path}.", f"What is in {path}?", f"Read {path} for me."])
        line = rng.choice(["port = 8080", "hello world", "TODO: fix the tests", "user=admin",
                           "version 1.2.3", "error: disk full"])
        return ask, {"path": path}, {"path": path, "content": line}, f"{path} contains: {line}"
    if name == "list_directory":
        d = rng.choice(DIRS)
        entries = sorted(f"{w}.{rng.choice(EXTS)}" for w in rng.sample(WORDS, rng.randint(1, 4)))
        ask = rng.choice([f"List the files in {d}.", f"What's in {d}?", f"ls {d}"])
        return ask, {"path": d}, {"entries": entries}, f"{d} contains {', '.join(entries)}."
    if name == "calculate":
        a, b, c = rng.randint(2, 99), rng.randint(2, 99), rng.randint(2, 9)
        expr = rng.choice([f"{a} * {b}", f"{a} + {b} * {c}", f"({a} + {b}) * {c}", f"{a * c} / {c}",
                           f"{a} - {b}"])
        value = eval(expr)  # noqa: S307  (our own generated arithmetic)
        value = int(value) if float(value).is_integer() else round(value, 4)
        ask = rng.choice([f"What is {expr}?", f"Calculate {expr}.", f"compute {expr}"])
        return ask, {"expression": expr}, {"result": value}, f"{expr} = {value}."
    if name == "convert_units":
        src, dst, factor = rng.choice(UNITS)
        value = rng.randint(1, 200)
        out = round(value * 9 / 5 + 32, 2) if factor is None else round(value * factor, 2)
        ask = rng.choice([f"Convert {value} {src} to {dst}.", f"How many {dst} is {value} {src}?",
                          f"{value} {src} in {dst}?"])
        return ask, {"value": value, "from_unit": src, "to_unit": dst}, {"value": out, "unit": dst}, \
            f"{value} {src} is {out} {dst}."
    if name == "send_email":
        who = rng.choice(NAMES)
        to = f"{who.lower()}@example.org"
        subject = rng.choice(["Meeting", "Lunch", "The report", "Tomorrow", "Holiday plans", "Invoice"])
        body = rng.choice(["See you at 10.", "The report is ready.", "Can we move the meeting to Friday?",
                           "Thanks for your help!", "The invoice is attached."])
        ask = f"Send an email to {to} with the subject \"{subject}\" saying: {body}"
        return ask, {"to": to, "subject": subject, "body": body}, {"status": "sent"}, \
            f"Done: the email to {to} was sent."
    if name == "create_event":
        title = rng.choice(["Dentist", "Team meeting", "Dinner with " + rng.choice(NAMES), "Gym",
                            "Project review", "Call with the bank"])
        date, hh = _date(rng), rng.randint(8, 19)
        ask = f"Add \"{title}\" to my calendar on {date} at {hh:02d}:00."
        args = {"title": title, "date": date, "time": f"{hh:02d}:00"}
        return ask, args, {"status": "created", "id": rng.randint(100, 999)}, \
            f"I added \"{title}\" on {date} at {hh:02d}:00."
    if name == "translate":
        text = rng.choice(["Good morning", "Thank you very much", "Where is the station?", "I like tea",
                           "See you tomorrow", "The file is ready"])
        lang = rng.choice(LANGS)
        ask = rng.choice([f"Translate \"{text}\" into {lang}.", f"How do you say \"{text}\" in {lang}?"])
        return ask, {"text": text, "target_language": lang}, {"translation": f"[{lang}] {text}"}, \
            f"In {lang}: [{lang}] {text}"
    if name == "package_info":
        cmd = rng.choice(commands) if commands else {"name": "ls", "package": "coreutils", "summary": "list directory contents"}
        ask = rng.choice([f"Which package provides {cmd['name']}?", f"Look up the package {cmd['package']}.",
                          f"Tell me about the Debian package {cmd['package']}."])
        return ask, {"name": cmd["package"]}, {"name": cmd["package"], "provides": [cmd["name"]],
                                               "summary": cmd["summary"]}, \
            f"The package {cmd['package']} provides {cmd['name']}: {cmd['summary']}."
    if name == "run_command":
        cmd = rng.choice(["uname -r", "df -h /", "whoami", "date", "uptime", "pwd", "ls /tmp"])
        output = {"uname -r": "6.1.0-18-amd64", "df -h /": "/dev/sda1 50G 21G 27G 44% /", "whoami": "user",
                  "date": "Mon Mar 3 10:12:00 UTC 2025", "uptime": "up 3 days, 2:14", "pwd": "/home/user",
                  "ls /tmp": "build cache"}[cmd]
        ask = rng.choice([f"Run `{cmd}` for me.", f"What does `{cmd}` print on this machine?"])
        return ask, {"command": cmd}, {"exit_code": 0, "stdout": output}, f"`{cmd}` printed: {output}"
    if name == "set_reminder":
        minutes = rng.choice([5, 10, 15, 20, 30, 45, 60, 90])
        text = rng.choice(["take the bread out", "call " + rng.choice(NAMES), "stretch", "check the build",
                           "water the plants"])
        ask = f"Remind me to {text} in {minutes} minutes."
        return ask, {"text": text, "minutes": minutes}, {"status": "scheduled"}, \
            f"OK, I will remind you to {text} in {minutes} minutes."
    raise ValueError(name)


def tool_reasoning(rng, name, args):
    first = next(iter(args.values()))
    return rng.choice([f"The user wants me to use {name}. I will call it with {first}.",
                       f"I need the {name} tool for this.",
                       f"I can answer this with {name}."])


# --------------------------------------------------------------------------- conversation kinds

def conv_tool(rng, commands):
    names = list(TOOLS)
    target = rng.choice(names)
    offered = rng.sample([n for n in names if n != target], rng.randint(0, 4)) + [target]
    rng.shuffle(offered)
    tools = [TOOLS[n] for n in offered]
    messages = [{"role": "system", "content": rng.choice(SYSTEM_PROMPTS)}] if rng.random() < 0.5 else []
    think = rng.random() < 0.5
    ask, args, result, answer = tool_case(rng, target, commands)
    messages.append({"role": "user", "content": ask})
    calls = [{"type": "function", "function": {"name": target, "arguments": args}}]
    results = [result]
    if rng.random() < 0.15 and target in ("get_weather", "get_time", "calculate", "convert_units"):
        ask2, args2, result2, answer2 = tool_case(rng, target, commands)
        calls.append({"type": "function", "function": {"name": target, "arguments": args2}})
        results.append(result2)
        answer = answer + " " + answer2
    assistant = {"role": "assistant", "content": "", "tool_calls": calls}
    if think:
        assistant["reasoning_content"] = tool_reasoning(rng, target, args)
    messages.append(assistant)
    for r in results:
        messages.append({"role": "tool", "content": json.dumps(r, ensure_ascii=False)})
    messages.append({"role": "assistant", "content": answer})
    if rng.random() < 0.3:  # a follow-up turn that needs another call
        target2 = rng.choice(offered)
        ask2, args2, result2, answer2 = tool_case(rng, target2, commands)
        messages.append({"role": "user", "content": ask2})
        messages.append({"role": "assistant", "content": "",
                         "tool_calls": [{"type": "function", "function": {"name": target2, "arguments": args2}}]})
        messages.append({"role": "tool", "content": json.dumps(result2, ensure_ascii=False)})
        messages.append({"role": "assistant", "content": answer2})
    # The training text ends at any of the assistant turns, so calls are learnt where the
    # template leaves them (as the last turn, with their <think> block).
    cut = rng.choice([i for i, m in enumerate(messages) if m["role"] == "assistant"])
    return messages[:cut + 1], tools


def conv_tool_not_needed(rng, commands):
    tools = [TOOLS[n] for n in rng.sample(list(TOOLS), rng.randint(1, 4))]
    messages, _ = conv_command_qa(rng, commands, turns=1)
    if rng.random() < 0.4:
        messages = [{"role": "user", "content": rng.choice(["Hello!", "Hi there.", "Thanks!", "Good morning."])},
                    {"role": "assistant", "content": rng.choice(["Hello! How can I help you?",
                                                                 "Hi! What can I do for you?",
                                                                 "You're welcome!"])}]
    return messages, tools


def conv_command_qa(rng, commands, turns=None):
    messages = [{"role": "system", "content": rng.choice(SYSTEM_PROMPTS)}] if rng.random() < 0.4 else []
    for _ in range(turns or rng.randint(1, 3)):
        cmd = rng.choice(commands)
        name, summary, package = cmd["name"], cmd["summary"], cmd["package"]
        q, a = rng.choice([
            (f"What does {name} do?", f"{name} is used to {summary}." if summary[:1].islower()
             else f"{name}: {summary}."),
            (f"What is `{name}`?", f"`{name}` is a command: {summary}. It comes from the {package} package."),
            (f"Which package contains {name}?", f"{name} is in the Debian package {package}."),
            (f"How do I read the manual of {name}?", f"Run `man {name}`. Its summary: {summary}."),
            (f"Explain {name} in one sentence.", f"{name} - {summary}."),
        ])
        messages.append({"role": "user", "content": q})
        reasoning = f"The user asks about {name}. The manual says: {summary}." if rng.random() < 0.3 else None
        msg = {"role": "assistant", "content": a}
        if reasoning:
            msg["reasoning_content"] = reasoning
        messages.append(msg)
    return messages, None


def conv_math(rng, commands):
    a, b = rng.randint(2, 500), rng.randint(2, 500)
    op = rng.choice(["+", "-", "*"])
    value = a + b if op == "+" else a - b if op == "-" else a * b
    word = {"+": "plus", "-": "minus", "*": "times"}[op]
    q = rng.choice([f"What is {a} {op} {b}?", f"Compute {a} {word} {b}.", f"{a} {op} {b} = ?"])
    if op == "*" and b >= 10:
        tens, ones = b // 10 * 10, b % 10
        steps = f"{a} * {tens} = {a * tens}. {a} * {ones} = {a * ones}. {a * tens} + {a * ones} = {value}."
    else:
        steps = f"{a} {word} {b} is {value}."
    messages = [{"role": "user", "content": q},
                {"role": "assistant", "content": rng.choice([f"{a} {op} {b} = {value}", f"The answer is {value}."]),
                 "reasoning_content": steps}]
    return messages, None


SCHEMAS = {
    "person": {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                                "city": {"type": "string"}, "job": {"type": "string"}},
               "required": ["name", "age", "city"]},
    "event": {"type": "object", "properties": {"title": {"type": "string"}, "date": {"type": "string"},
                                               "attendees": {"type": "array", "items": {"type": "string"}}},
              "required": ["title", "date", "attendees"]},
    "command": {"type": "object", "properties": {"name": {"type": "string"}, "package": {"type": "string"},
                                                 "summary": {"type": "string"}},
                "required": ["name", "package", "summary"]},
    "sentiment": {"type": "object", "properties": {"sentiment": {"type": "string",
                                                                 "enum": ["positive", "negative", "neutral"]},
                                                   "confidence": {"type": "number"}},
                  "required": ["sentiment", "confidence"]},
}


def conv_json(rng, commands):
    kind = rng.choice(list(SCHEMAS))
    if kind == "person":
        name, age, city, job = rng.choice(NAMES), rng.randint(18, 90), rng.choice(CITIES), rng.choice(JOBS)
        text = rng.choice([f"{name} is a {age}-year-old {job} who lives in {city}.",
                           f"Meet {name}, {age}, a {job} from {city}.",
                           f"{name} ({age}) works as a {job} in {city}."])
        answer = {"name": name, "age": age, "city": city, "job": job}
        ask = f"Extract the person from this text: {text}"
    elif kind == "event":
        people = rng.sample(NAMES, rng.randint(1, 3))
        title = rng.choice(["Planning meeting", "Lunch", "Code review", "Birthday party", "Workshop"])
        day, month = rng.randint(1, 28), rng.randint(1, 12)
        text = f"{title} on {MONTHS[month - 1]} {day}, 2025 with {' and '.join(people)}."
        answer = {"title": title, "date": f"2025-{month:02d}-{day:02d}", "attendees": people}
        ask = f"Turn this into an event: {text}"
    elif kind == "command":
        cmd = rng.choice(commands)
        answer = {"name": cmd["name"], "package": cmd["package"], "summary": cmd["summary"]}
        ask = f"Describe the command {cmd['name']}."
    else:
        mood, text = rng.choice([("positive", "I love this tool, it works great!"),
                                 ("positive", "Thanks, that fixed it."),
                                 ("negative", "The build failed again and I lost an hour."),
                                 ("negative", "This is slow and confusing."),
                                 ("neutral", "The package was updated on Monday."),
                                 ("neutral", "The file has 120 lines.")])
        answer = {"sentiment": mood, "confidence": round(rng.uniform(0.6, 0.99), 2)}
        ask = f"Classify the sentiment of: \"{text}\""
    schema = json.dumps(SCHEMAS[kind], ensure_ascii=False)
    style = rng.random()
    if style < 0.5:
        messages = [{"role": "system", "content": f"Reply with a JSON object that follows this schema:\n{schema}"},
                    {"role": "user", "content": ask}]
    else:
        messages = [{"role": "user", "content": f"{ask}\nAnswer in JSON with this schema: {schema}"}]
    indent = 2 if rng.random() < 0.3 else None
    messages.append({"role": "assistant", "content": json.dumps(answer, ensure_ascii=False, indent=indent)})
    return messages, None


def conv_smalltalk(rng, commands):
    name = rng.choice(NAMES)
    pairs = [("Hello!", "Hello! How can I help you today?"),
             (f"My name is {name}.", f"Nice to meet you, {name}!"),
             ("What can you do?", "I can answer questions, explain commands, call tools and write JSON."),
             ("Who are you?", "I am a small language model running locally."),
             ("Thank you.", "You're welcome!"),
             ("Tell me a fact about Debian.", "Debian is a free operating system made by volunteers."),
             ("What is a man page?", "A man page is the manual of a command. Read one with `man NAME`."),
             ("Goodbye!", "Goodbye! Have a nice day.")]
    chosen = rng.sample(pairs, rng.randint(2, 4))
    messages = []
    for q, a in chosen:
        messages += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    if rng.random() < 0.5 and any(q.startswith("My name") for q, _ in chosen):
        messages += [{"role": "user", "content": "What is my name?"},
                     {"role": "assistant", "content": f"Your name is {name}."}]
    return messages, None


KINDS = [(conv_tool, 0.38), (conv_tool_not_needed, 0.07), (conv_command_qa, 0.2), (conv_math, 0.1),
         (conv_json, 0.17), (conv_smalltalk, 0.08)]


def commands_from_man_pages(docs):
    """[{"name", "summary", "package"}] from the NAME sections of the rendered man pages."""
    commands = []
    for doc in docs:
        if doc["kind"] != "man" or not doc["id"].startswith("man:man1/"):
            continue
        m = re.search(r"^NAME\n\s+(\S[^\n]*?)\s+[-\u2010\u2013\u2014\u2212]+\s+([^\n]+)", doc["text"], re.MULTILINE)
        if not m:
            continue
        name = m.group(1).split(",")[0].strip()
        summary = m.group(2).strip().rstrip(".")
        if 2 <= len(summary) <= 90 and re.fullmatch(r"[\w.+-]+", name):
            commands.append({"name": name, "summary": summary, "package": doc["package"]})
    return commands or [{"name": "ls", "summary": "list directory contents", "package": "coreutils"}]


def generate(count, seed, commands):
    rng = random.Random(seed)
    render = make_renderer()
    funcs, weights = zip(*KINDS)
    rows = []
    for _ in range(count):
        fn = rng.choices(funcs, weights)[0]
        messages, tools = fn(rng, commands)
        rows.append({"kind": fn.__name__[5:], "text": render(messages, tools)})
    return rows


def main():
    parser = argparse.ArgumentParser(description="print rendered synthetic conversations")
    parser.add_argument("--count", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    for row in generate(args.count, args.seed, commands_from_man_pages([])):
        sys.stdout.write(f"=== {row['kind']}\n{row['text']}")


if __name__ == "__main__":
    main()
