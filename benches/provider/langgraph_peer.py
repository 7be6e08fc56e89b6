"""The provider bench's LangGraph peer (`benches/provider/main.rs` runs it).

A LangGraph StateGraph of the four agents of `../shared/bench/common.py`'s workload, each
node calling ChatOpenAI(streaming=True) from langchain-openai against the bench's loopback
server with the whole history (its instructions as the system message, the task, every
earlier reply), routed by common.py's router on the reply. `--turns 1` stops after the
Planner's turn (the fixed cost the bench subtracts). The server refuses a request from an
agent the script does not expect at that turn, which fails this run.

    python langgraph_peer.py --base-url http://127.0.0.1:PORT/run/ID/v1 --turns 201 \
        --common ../shared/bench
"""

from __future__ import annotations

import argparse
import operator
import sys
from typing import Annotated, TypedDict

TASK = "Add a --verbose flag to the parser CLI and test it."
INSTRUCTIONS = {
    "Planner": "Plan the work.",
    "Developer": "Write the code.",
    "Tester": "Run the tests.",
    "Reviewer": "Review the change.",
}


class State(TypedDict):
    messages: Annotated[list, operator.add]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--turns", type=int, required=True)
    parser.add_argument("--common", required=True)
    args = parser.parse_args()
    sys.path.insert(0, args.common)
    import common as c  # noqa: E402
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, StateGraph

    llm = ChatOpenAI(
        model="bench",
        base_url=args.base_url,
        api_key="none",
        streaming=True,
        stream_usage=True,
        max_retries=0,
    )

    def make_node(name: str):
        def node(state: State):
            history = [SystemMessage(content=INSTRUCTIONS[name]), HumanMessage(content=TASK)]
            history += [AIMessage(content=m["content"], name=m["role"]) for m in state["messages"]]
            reply = llm.invoke(history)
            return {"messages": [{"role": name, "content": reply.content}]}

        return node

    def router(state: State) -> str:
        if len(state["messages"]) >= args.turns:
            return END
        target = c.route_target(state["messages"][-1]["content"])
        return END if target == c.END_TARGET else target

    builder = StateGraph(State)
    for name in INSTRUCTIONS:
        builder.add_node(name, make_node(name))
        builder.add_conditional_edges(
            name,
            router,
            {"Developer": "Developer", "Tester": "Tester", "Reviewer": "Reviewer", END: END},
        )
    builder.add_edge(START, "Planner")
    graph = builder.compile()
    result = graph.invoke({"messages": []}, {"recursion_limit": args.turns + 10})
    trace = [m["role"] for m in result["messages"]]
    expected = [c.expected_step(t, args.turns)[0] for t in range(args.turns)] if args.turns > 1 else ["Planner"]
    assert trace == expected, f"trace {trace[:5]}… differs from the script"
    if args.turns > 1:
        assert c.route_target(result["messages"][-1]["content"]) == c.END_TARGET


if __name__ == "__main__":
    main()
