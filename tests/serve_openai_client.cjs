// serve_openai_client.cjs - the official openai npm client (6.x) against `judgerl serve` (run by test_serve_openai.sh).
// Usage: node serve_openai_client.cjs OPENAI_PACKAGE_DIR BASE_URL API_KEY
'use strict';
const OpenAI = require(process.argv[2]).default || require(process.argv[2]);
const baseURL = process.argv[3], apiKey = process.argv[4];
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60000 });
const model = 'tiny';
const msgs = [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Say something.' }];
let failed = 0;

async function tcase(name, fn) {
  try {
    await fn();
    console.log(`ok - ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL - ${name}: ${(e && e.stack) || e}`.replace(/\n/g, ' | ').slice(0, 600));
  }
}
function assert(c, msg) { if (!c) throw new Error(msg); }

async function expectStatus(fn, cls, status) {
  try { await fn(); } catch (e) {
    assert(e instanceof cls, `expected ${cls.name}, got ${e && e.constructor && e.constructor.name}: ${e.message}`);
    assert(e.status === status, `status ${e.status}, expected ${status}`);
    assert(typeof e.message === 'string' && e.message.length > 0, 'no message');
    return;
  }
  throw new Error('no error thrown');
}

(async () => {
  await tcase('models_list', async () => {
    const page = await client.models.list();
    assert(page.data.length === 1 && page.data[0].id === model, JSON.stringify(page.data));
  });
  await tcase('chat_non_stream', async () => {
    const r = await client.chat.completions.create({ model, messages: msgs, max_tokens: 16, seed: 9 });
    assert(r.object === 'chat.completion', r.object);
    assert(r.choices.length === 1 && typeof r.choices[0].message.content === 'string', JSON.stringify(r.choices));
    assert(['stop', 'length'].includes(r.choices[0].finish_reason), r.choices[0].finish_reason);
    assert(r.usage.total_tokens === r.usage.prompt_tokens + r.usage.completion_tokens, JSON.stringify(r.usage));
  });
  await tcase('chat_stream_equals_non_stream', async () => {
    const body = { model, messages: msgs, max_completion_tokens: 24, seed: 123, temperature: 1.0 };
    const full = await client.chat.completions.create(body);
    const stream = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
    let text = '', usage = null, finish = null, chunks = 0;
    for await (const ch of stream) {
      chunks++;
      if (ch.usage) usage = ch.usage;
      for (const c of ch.choices) {
        if (c.delta && c.delta.content) text += c.delta.content;
        if (c.finish_reason) finish = c.finish_reason;
      }
    }
    assert(chunks >= 2, `chunks ${chunks}`);
    assert(text === full.choices[0].message.content, `stream '${text}' vs '${full.choices[0].message.content}'`);
    assert(finish === full.choices[0].finish_reason, `finish ${finish}`);
    assert(usage && usage.completion_tokens === full.usage.completion_tokens, JSON.stringify(usage));
  });
  await tcase('chat_logprobs', async () => {
    const r = await client.chat.completions.create({ model, messages: msgs, max_tokens: 6, logprobs: true, top_logprobs: 3, ignore_eos: true });
    const c = r.choices[0].logprobs.content;
    assert(c.length === 6, `entries ${c.length}`);
    for (const e of c) {
      assert(typeof e.token === 'string' && e.logprob <= 0 && Array.isArray(e.bytes), JSON.stringify(e));
      assert(e.top_logprobs.length === 3 && e.top_logprobs[0].logprob >= e.top_logprobs[2].logprob, JSON.stringify(e.top_logprobs));
    }
  });
  await tcase('chat_n_3', async () => {
    const r = await client.chat.completions.create({ model, messages: msgs, max_tokens: 5, n: 3, temperature: 1.2 });
    assert(r.choices.length === 3 && r.choices.map((c) => c.index).join() === '0,1,2', JSON.stringify(r.choices));
  });
  await tcase('completions_logprobs', async () => {
    const r = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 5, logprobs: 2, ignore_eos: true });
    const lp = r.choices[0].logprobs;
    assert(r.object === 'text_completion' && typeof r.choices[0].text === 'string', JSON.stringify(r));
    assert(lp.tokens.length === 5 && lp.token_logprobs.length === 5 && lp.text_offset.length === 5, JSON.stringify(lp));
    assert(Object.keys(lp.top_logprobs[0]).length >= 1, JSON.stringify(lp.top_logprobs));
    assert(lp.tokens.join('') === r.choices[0].text || r.choices[0].text.includes('\ufffd'), 'tokens do not spell the text');
  });
  await tcase('completions_stream', async () => {
    const stream = await client.completions.create({ model, prompt: 'abc', max_tokens: 8, stream: true, seed: 5 });
    let text = '', n = 0;
    for await (const ch of stream) { n++; text += ch.choices[0] ? ch.choices[0].text : ''; }
    const full = await client.completions.create({ model, prompt: 'abc', max_tokens: 8, seed: 5 });
    assert(n >= 1 && text === full.choices[0].text, `'${text}' vs '${full.choices[0].text}'`);
  });
  await tcase('guided_choice', async () => {
    const choices = ['correct', 'incorrect', 'unsure'];
    for (let k = 0; k < 4; k++) {
      const r = await client.chat.completions.create({ model, messages: msgs, guided_choice: choices, n: 2, temperature: 1.5 });
      for (const c of r.choices) assert(choices.includes(c.message.content), `got '${c.message.content}'`);
    }
  });
  await tcase('guided_regex', async () => {
    const r = await client.chat.completions.create({ model, messages: msgs, guided_regex: 'Score: [1-5]', temperature: 1.0 });
    assert(/^Score: [1-5]$/.test(r.choices[0].message.content), r.choices[0].message.content);
  });
  await tcase('error_wrong_key_401', async () => {
    const bad = new OpenAI({ baseURL, apiKey: 'wrong', maxRetries: 0 });
    await expectStatus(() => bad.chat.completions.create({ model, messages: msgs }), OpenAI.AuthenticationError, 401);
  });
  await tcase('error_unknown_model_404', async () => {
    await expectStatus(() => client.chat.completions.create({ model: 'gpt-4o', messages: msgs }), OpenAI.NotFoundError, 404);
  });
  await tcase('error_bad_request_400', async () => {
    await expectStatus(() => client.completions.create({ model, prompt: 'a', max_tokens: -1 }), OpenAI.BadRequestError, 400);
    await expectStatus(() => client.chat.completions.create({ model, messages: msgs, temperature: 'hot' }), OpenAI.BadRequestError, 400);
  });
  await tcase('still_serving_after_errors', async () => {
    const r = await client.completions.create({ model, prompt: 'ok', max_tokens: 2 });
    assert(r.choices.length === 1, 'no choice');
  });
  process.exit(failed ? 1 : 0);
})();
