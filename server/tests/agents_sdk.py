"""The OpenAI Agents SDK (`openai-agents`) against `stencil serve`: an `Agent` with a function
tool, through both of the SDK's model classes (the Chat Completions API and the Responses API),
and an `Agent` with a structured `output_type` (a strict JSON schema).

    python3 server/tests/agents_sdk.py --base-url http://127.0.0.1:8000/v1

The tool turn stops at the first call (`tool_use_behavior="stop_on_first_tool"`), so the
result does not depend on what a small model says after the tool's answer.
"""

import argparse
import asyncio
import sys

from agents import (
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI
from pydantic import BaseModel, Field


class City(BaseModel):
    # Listed in this order on purpose: strict schemas keep it.
    name: str = Field(max_length=30)
    country: str = Field(max_length=30)
    population_millions: float


async def main(base_url: str) -> int:
    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=base_url, api_key="unused")
    failures = 0
    calls = []

    @function_tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        calls.append(city)
        return f"sunny in {city}"

    models = {
        "chat completions": OpenAIChatCompletionsModel(model="stencil", openai_client=client),
        "responses": OpenAIResponsesModel(model="stencil", openai_client=client),
    }
    for name, model in models.items():
        calls.clear()
        agent = Agent(
            name="weather",
            instructions="Answer with the get_weather tool.",
            tools=[get_weather],
            model=model,
            model_settings=ModelSettings(tool_choice="required", temperature=0, max_tokens=64),
            tool_use_behavior="stop_on_first_tool",
        )
        result = await Runner.run(agent, "What is the weather in Paris?", max_turns=2)
        if len(calls) != 1 or not isinstance(calls[0], str):
            print(f"FAIL {name}: the tool was called {calls!r}")
            failures += 1
        elif result.final_output != f"sunny in {calls[0]}":
            print(f"FAIL {name}: final output {result.final_output!r}")
            failures += 1
        else:
            print(f"ok   {name}: get_weather({calls[0]!r}) -> {result.final_output!r}")

    agent = Agent(
        name="facts",
        instructions="Describe the city the user names.",
        model=models["chat completions"],
        model_settings=ModelSettings(temperature=0, max_tokens=80),
        output_type=City,
    )
    result = await Runner.run(agent, "Tell me about Paris.", max_turns=1)
    if not isinstance(result.final_output, City):
        print(f"FAIL structured output: {result.final_output!r}")
        failures += 1
    else:
        print(f"ok   structured output: {result.final_output!r}")
    return failures


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", required=True, help="e.g. http://127.0.0.1:8000/v1")
    sys.exit(1 if asyncio.run(main(ap.parse_args().base_url)) else 0)
