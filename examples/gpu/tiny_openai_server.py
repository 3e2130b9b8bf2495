"""A small, real GPU-backed OpenAI-compatible completions server for end-to-end checks of servelab.

It runs an actual transformer decode loop (KV cache, one token per step) on the GPU with a randomly initialised
Llama-architecture model, so no weights are downloaded. Requests are served one at a time: it stands in for a real
server's startup, health and streaming behaviour, not for its batching.

    python3 tiny_openai_server.py --port 8000 --layers 16 --hidden 2048 --dtype bfloat16
"""
import argparse
import asyncio
import json
import threading
import time

from aiohttp import web


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--model-name", default="tiny-llama-random")
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    return parser.parse_args()


class Engine:
    def __init__(self, args):
        self.args = args
        self.ready = False
        self.lock = threading.Lock()

    def load(self):
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM

        self.torch = torch
        print("INFO Loading model weights (random init) ...", flush=True)
        start = time.time()
        config = LlamaConfig(
            vocab_size=self.args.vocab,
            hidden_size=self.args.hidden,
            intermediate_size=self.args.hidden * 4 // 1,
            num_hidden_layers=self.args.layers,
            num_attention_heads=self.args.hidden // 128,
            num_key_value_heads=max(1, self.args.hidden // 512),
            max_position_embeddings=8192,
        )
        dtype = getattr(torch, self.args.dtype)
        self.model = LlamaForCausalLM(config).to(device="cuda", dtype=dtype).eval()
        params = sum(p.numel() for p in self.model.parameters()) / 1e9
        print(f"INFO Loading weights took {time.time() - start:.2f} seconds ({params:.2f}B params, {self.args.dtype})", flush=True)
        print("INFO Warming up kernels ...", flush=True)
        for _ in self.generate([1, 2, 3], 8):
            pass
        self.ready = True

    def tokenize(self, text):
        return [hash(word) % (self.args.vocab - 2) + 2 for word in text.split()] or [1]

    def generate(self, prompt_ids, max_tokens):
        torch = self.torch
        with self.lock, torch.inference_mode():
            input_ids = torch.tensor([prompt_ids], device="cuda")
            past = None
            for _ in range(max_tokens):
                out = self.model(input_ids=input_ids, past_key_values=past, use_cache=True)
                past = out.past_key_values
                next_id = int(out.logits[0, -1].argmax())
                input_ids = torch.tensor([[next_id]], device="cuda")
                yield next_id


async def main():
    args = parse_args()
    engine = Engine(args)
    app = web.Application()

    async def health(_request):
        if not engine.ready:
            return web.json_response({"status": "loading"}, status=503)
        return web.json_response({"status": "ok"})

    async def models(_request):
        if not engine.ready:
            return web.json_response({"error": "loading"}, status=503)
        return web.json_response({"object": "list", "data": [{"id": args.model_name, "object": "model"}]})

    async def completions(request):
        if not engine.ready:
            return web.json_response({"error": {"message": "model is loading"}}, status=503)
        body = await request.json()
        prompt = body.get("prompt", "")
        prompt = prompt[0] if isinstance(prompt, list) else prompt
        prompt_ids = engine.tokenize(prompt)
        max_tokens = int(body.get("max_tokens", 16))
        created = int(time.time())
        loop = asyncio.get_running_loop()
        queue = asyncio.Queue()

        def worker():
            for token in engine.generate(prompt_ids, max_tokens):
                loop.call_soon_threadsafe(queue.put_nowait, token)
            loop.call_soon_threadsafe(queue.put_nowait, None)

        threading.Thread(target=worker, daemon=True).start()
        usage = lambda n: {"prompt_tokens": len(prompt_ids), "completion_tokens": n, "total_tokens": len(prompt_ids) + n}
        if not body.get("stream"):
            tokens = []
            while (token := await queue.get()) is not None:
                tokens.append(token)
            text = "".join(f" t{t}" for t in tokens)
            return web.json_response({"id": "cmpl-1", "object": "text_completion", "created": created, "model": args.model_name,
                                      "choices": [{"index": 0, "text": text, "finish_reason": "length"}], "usage": usage(len(tokens))})
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        count = 0
        while (token := await queue.get()) is not None:
            count += 1
            chunk = {"id": "cmpl-1", "object": "text_completion", "created": created, "model": args.model_name,
                     "choices": [{"index": 0, "text": f" t{token}", "finish_reason": None}]}
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        final = {"id": "cmpl-1", "object": "text_completion", "created": created, "model": args.model_name,
                 "choices": [{"index": 0, "text": "", "finish_reason": "length"}]}
        await response.write(f"data: {json.dumps(final)}\n\n".encode())
        if (body.get("stream_options") or {}).get("include_usage"):
            await response.write(f"data: {json.dumps({'id': 'cmpl-1', 'object': 'text_completion', 'choices': [], 'usage': usage(count)})}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        return response

    app.router.add_get("/health", health)
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/completions", completions)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, args.host, args.port).start()
    print(f"INFO server is listening on http://{args.host}:{args.port} (loading model)", flush=True)
    await asyncio.to_thread(engine.load)
    print(f"INFO Application startup complete. Uvicorn running on http://{args.host}:{args.port}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
