// The README quickstart with the official openai SDK: one chat completion
// and one streamed completion through the gateway. Defaults match the
// README; override them with environment variables.
import OpenAI from "openai";

const gatewayURL = process.env.GATEWAY_URL ?? "http://127.0.0.1:8787/v1";
const gatewayKey = process.env.GATEWAY_API_KEY ?? "dev-admin-key-change-me";
const upstream = process.env.UPSTREAM_URL ?? "http://127.0.0.1:9090/v1";

const client = new OpenAI({
  baseURL: gatewayURL,
  apiKey: process.env.OPENAI_API_KEY ?? "sk-anything", // sent on to the provider
  defaultHeaders: {
    "x-gateway-api-key": gatewayKey,
    "x-gateway-provider": "openai",
    "x-gateway-custom-host": upstream, // leave out to call api.openai.com
  },
});

const completion = await client.chat.completions.create({
  model: "gpt-4o-mini",
  messages: [{ role: "user", content: "Say hello" }],
});
console.log("chat:", completion.choices[0].message.content.slice(0, 60) + "...");

const stream = await client.chat.completions.create({
  model: "gpt-4o-mini",
  messages: [{ role: "user", content: "Say hello, slowly" }],
  stream: true,
});
let chunks = 0;
for await (const chunk of stream) {
  if (chunk.choices[0]?.delta?.content) chunks++;
}
console.log("stream:", chunks, "content chunks");
