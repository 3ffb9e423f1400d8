/**
 * Benchmark 12 (issue 21): learned memories, in process on the default SQLite store.
 *
 * 20 people each state 25 facts about themselves to one character, in 200 messages (two or
 * three facts a message) and the character's 200 replies, spread over a DM, a server channel
 * and a scene with another person. The real learner learns them: batches queued and claimed in
 * the database, the real extraction requests, answered by a rule-based extractor standing in
 * for the engine (no model can run here at a useful speed), whose cost is counted in tokens as
 * the service would count it. Then 200 questions (ten per person, paraphrased: "What is the
 * name of my sibling?" for "My sister is called Mia.") are asked of the real recall:
 * recall@8 by words alone, and fused with a stand-in embedder that knows the synonyms the
 * questions use; every prompt's memories checked against the scope rules; and the time recall
 * adds to a reply with 1,000 memories about one person.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { createRandomIds } from '../src/core/clock.js';
import { Learner, defaultLearnerOptions } from '../src/core/learning/learner.js';
import { LearnedRecall } from '../src/core/learning/recall.js';
import type { ChatModel, ChatRequest, Embedder } from '../src/core/ports.js';
import type { MemoryOrigin } from '../src/core/records.js';
import { LearningTokenEstimator, estimateTextTokens } from '../src/core/tokens.js';
import { openSqlStore } from '../src/store/sql/sql-store.js';
import { learnedMemoryRecord, messageRecord, newAccountRecords, uniqueUsername } from '../test/store/repository-fixtures.js';
import { percentile, round } from './stats.js';

/** A fact as said, its question in other words, and the concept both speak of. */
const topics: Array<{ concept: string; say: (value: string) => string; ask: string }> = [
  { concept: 'sibling', say: (v) => `My sister is called ${v}.`, ask: 'What is the name of my sibling?' },
  { concept: 'home', say: (v) => `I live in ${v}.`, ask: 'Which town is my home?' },
  { concept: 'pet', say: (v) => `My dog is named ${v}.`, ask: 'What do I call my puppy?' },
  { concept: 'work', say: (v) => `I work as a ${v}.`, ask: 'What is my job?' },
  { concept: 'food', say: (v) => `My favourite dish is ${v}.`, ask: 'Which meal do I like most?' },
  { concept: 'drink', say: (v) => `I always drink ${v} in the morning.`, ask: 'What beverage starts my day?' },
  { concept: 'sport', say: (v) => `I play ${v} every weekend.`, ask: 'Which game do I practise on Saturdays?' },
  { concept: 'music', say: (v) => `My favourite band is ${v}.`, ask: 'Which group do I listen to most?' },
  { concept: 'book', say: (v) => `I am reading ${v}.`, ask: 'What novel is on my nightstand?' },
  { concept: 'partner', say: (v) => `My wife is ${v}.`, ask: 'Who am I married to?' },
  { concept: 'child', say: (v) => `My son is called ${v}.`, ask: "What is my boy's name?" },
  { concept: 'birth', say: (v) => `I was born in ${v}.`, ask: 'Where do I come from originally?' },
  { concept: 'car', say: (v) => `I drive a ${v}.`, ask: 'What vehicle do I own?' },
  { concept: 'language', say: (v) => `I speak ${v} at home.`, ask: 'Which tongue does my family use?' },
  { concept: 'fear', say: (v) => `I am afraid of ${v}.`, ask: 'What scares me?' },
  { concept: 'colour', say: (v) => `My favourite colour is ${v}.`, ask: 'Which hue do I prefer?' },
  { concept: 'school', say: (v) => `I studied at ${v}.`, ask: 'Which university did I attend?' },
  { concept: 'hobby', say: (v) => `I collect ${v}.`, ask: 'What do I gather as a pastime?' },
  { concept: 'travel', say: (v) => `Next month I fly to ${v}.`, ask: 'Where is my upcoming trip?' },
  { concept: 'health', say: (v) => `I am allergic to ${v}.`, ask: 'What gives me a reaction?' },
  { concept: 'friend', say: (v) => `My best friend is ${v}.`, ask: 'Who is my closest pal?' },
  { concept: 'garden', say: (v) => `I grow ${v} in my garden.`, ask: 'What plants are in my yard?' },
  { concept: 'instrument', say: (v) => `I play the ${v}.`, ask: 'Which musical instrument can I perform on?' },
  { concept: 'season', say: (v) => `My favourite season is ${v}.`, ask: 'Which time of year do I love?' },
  { concept: 'film', say: (v) => `My favourite film is ${v}.`, ask: 'Which movie do I like best?' },
];
const values = ['Mia', 'Porto', 'Rex', 'baker', 'paella', 'tea', 'tennis', 'Abba', 'Dune', 'Lea', 'Tom', 'Oslo', 'Volvo', 'Basque', 'spiders', 'green', 'Coimbra', 'stamps', 'Lima', 'peanuts', 'Ravi', 'tomatoes', 'cello', 'autumn', 'Amelie'];

const stopWords = new Set(['my', 'i', 'is', 'a', 'the', 'in', 'of', 'at', 'do', 'what', 'which', 'who', 'am', 'to', 'x', 'every', 'on', 'did', 'does', 'can', 'as', 'most', 'best']);

/** Words of the questions and the facts, by the concept they stand for: what a real embedding model knows and a word index does not. */
const synonyms: Record<string, string[]> = Object.fromEntries(
  topics.map((topic) => [topic.concept, [...new Set(`${topic.say('x')} ${topic.ask}`.toLowerCase().match(/[a-z]+/g) ?? [])].filter((word) => !stopWords.has(word))]),
);

/** One dimension per concept: a text points at the concepts its words belong to. */
const conceptEmbedder: Embedder = {
  modelId: 'concepts',
  embed: async (texts) =>
    texts.map((text) => {
      const words = new Set(text.toLowerCase().match(/[a-z]+/g) ?? []);
      return topics.map((topic) => (synonyms[topic.concept]!.some((word) => words.has(word)) ? 1 : 0));
    }),
};

/** The engine's part, by rule: every "My …"/"I …" sentence of a person's line is a fact about them. */
function ruleExtractor(spent: { prompt: number; answer: number; requests: number }): ChatModel {
  const estimator = new LearningTokenEstimator();
  const answerOf = (request: ChatRequest): string => {
    const text = String(request.messages.at(-1)?.content ?? '');
    const facts = [];
    for (const [, number, speaker, said] of text.matchAll(/^\[(\d+)\] \S+ \(\w+\) ([^:(]+?)(?: \([^)]*\))?: (.+)$/gm)) {
      for (const sentence of said!.match(/[^.]+\./g) ?? []) {
        const line = sentence.trim();
        if (!/^(My|I|Next) /.test(line)) continue;
        const third = line.replace(/^My /, `${speaker}'s `).replace(/^I /, `${speaker} `).replace(/ I /, ` ${speaker} `);
        facts.push({ message: Number(number), fact: third, firstPerson: line, importance: 3, replaces: null });
      }
    }
    return JSON.stringify({ facts });
  };
  return {
    provider: 'rule-extractor',
    modelId: 'rules',
    async generate(request) {
      const text = answerOf(request);
      spent.requests += 1;
      spent.prompt += (await estimator.count(request.messages.map((message) => String(message.content)))).reduce((sum, count) => sum + count, 0);
      spent.answer += estimateTextTokens(text);
      return { text, finishReason: 'stop' };
    },
    async *stream() {
      throw new Error('not used');
    },
  };
}

export async function benchmarkMemories(scratch: string): Promise<unknown> {
  await mkdir(scratch, { recursive: true });
  const store = await openSqlStore(`sqlite://${path.join(scratch, 'memories.sqlite')}`);
  const ids = createRandomIds();
  let micros = Date.UTC(2026, 10, 26) * 1000;
  const clock = { nowMillis: () => Math.floor(micros / 1000), nowMicros: () => (micros += 1) };
  try {
    const owner = newAccountRecords(uniqueUsername('captain'));
    await store.accounts.create(owner);
    const characterId = owner.character.id;
    const people: Array<{ id: string; username: string }> = [];
    for (let index = 0; index < 20; index += 1) {
      const records = newAccountRecords(`p${index}`);
      await store.accounts.create(records);
      people.push(records.account);
    }
    const open = async (speakers: readonly string[], guildId?: string | null) => {
      const id = ids.uuid();
      await store.conversations.create({ id, accountId: speakers[0]!, characterId, createdMicros: clock.nowMicros(), updatedMicros: clock.nowMicros(), summary: null, summaryThroughPosition: null }, speakers[0]!);
      for (const speaker of speakers.slice(1)) await store.conversations.addSpeaker(id, speaker, clock.nowMicros());
      if (guildId !== undefined) await store.discordLinks.link({ conversationId: id, channelId: `ch-${id}`, guildId });
      return id;
    };
    // Each person: a DM, a server channel, and a scene shared with the next person.
    const places: Array<{ person: string; dm: string; server: string; scene: string }> = [];
    for (const [index, person] of people.entries()) {
      places.push({ person: person.id, dm: await open([person.id], null), server: await open([person.id], 'g1'), scene: await open([person.id, people[(index + 1) % people.length]!.id]) });
    }
    // 200 messages of 2 or 3 facts each, and a reply to each.
    let messages = 0;
    const started = performance.now();
    for (const [personIndex, place] of places.entries()) {
      const facts = topics.map((topic, topicIndex) => topic.say(values[(topicIndex + personIndex) % values.length]!));
      const lines = Array.from({ length: 10 }, (_, line) => facts.slice(Math.floor((line * 25) / 10), Math.floor(((line + 1) * 25) / 10)).join(' '));
      for (const [line, content] of lines.entries()) {
        const conversationId = line < 4 ? place.dm : line < 8 ? place.server : place.scene;
        await store.conversations.append(conversationId, { ...messageRecord(place.person, content), createdMicros: clock.nowMicros() });
        await store.conversations.append(conversationId, { ...messageRecord(characterId, 'Noted.'), participantType: 'character', createdMicros: clock.nowMicros() });
        messages += 2;
      }
    }
    const spent = { prompt: 0, answer: 0, requests: 0 };
    const learner = new Learner(store, ruleExtractor(spent), new LearningTokenEstimator(), clock, ids, silent, 'bench', { ...defaultLearnerOptions, dailyTokensPerCharacter: 100_000_000 });
    for (const place of places) {
      for (const conversationId of [place.dm, place.server, place.scene]) {
        const positions = (await store.conversations.messages(conversationId)).map((message) => message.position);
        // As the learner queues them: six messages a batch.
        for (let next = 5; next < positions.length + 5; next += 6) {
          await store.memoryBatches.enqueue(conversationId, positions[Math.min(next, positions.length - 1)]!, { id: ids.uuid(), createdMicros: clock.nowMicros(), runAfterMillis: clock.nowMillis() });
        }
      }
    }
    let batches = 0;
    while (await learner.runOnce()) batches += 1;
    const learnMs = performance.now() - started;
    const stored = (await Promise.all(people.map((person) => store.learnedMemories.about(person.id)))).flat();

    // Recall@8 on paraphrased questions, ten per person, in private (every memory usable).
    const recallAt = async (recall: LearnedRecall) => {
      let hits = 0;
      let asked = 0;
      for (const [personIndex, place] of places.entries()) {
        for (let question = 0; question < 10; question += 1) {
          const topicIndex = (personIndex * 7 + question * 3) % topics.length;
          const expected = `${people[personIndex]!.username}${topics[topicIndex]!.say(values[(topicIndex + personIndex) % values.length]!).replace(/^My /, "'s ").replace(/^I /, ' ').replace(/^Next month I /, ' next month ')}`;
          const recalled = await recall.about(owner.character, { id: place.dm, speakerAccountIds: [place.person] }, { participantType: 'account', participantId: place.person }, topics[topicIndex]!.ask, 8);
          asked += 1;
          if (recalled?.facts.some((fact) => fact.text.toLowerCase() === expected.toLowerCase() || fact.text.toLowerCase().includes(values[(topicIndex + personIndex) % values.length]!.toLowerCase()))) hits += 1;
        }
      }
      return round(hits / asked, 3);
    };
    const words = new LearnedRecall(store, clock);
    const fused = new LearnedRecall(store, clock, conceptEmbedder);

    // The scope rules, checked on every prompt: a server channel and a scene, for each person.
    let prompts = 0;
    let leaks = 0;
    for (const place of places) {
      const scene = await store.conversations.speakers(place.scene);
      for (const [conversationId, speakers, allowed] of [
        [place.server, [place.person], `server:g1`],
        [place.scene, scene, `conversation:${place.scene}`],
      ] as Array<[string, string[], MemoryOrigin]>) {
        for (const speaker of speakers) {
          const recalled = await fused.about(owner.character, { id: conversationId, speakerAccountIds: speakers }, { participantType: 'account', participantId: speaker }, topics.map((topic) => topic.ask).join(' '), 8);
          prompts += 1;
          leaks += (recalled?.facts ?? []).filter((fact) => fact.subjectAccountId !== speaker || fact.origin !== allowed).length;
        }
      }
    }

    // Time recall adds to a reply: 1,000 memories about one person.
    const heavy = newAccountRecords(uniqueUsername('heavy'));
    await store.accounts.create(heavy);
    for (let index = 0; index < 1_000; index += 1) {
      const topic = topics[index % topics.length]!;
      await store.learnedMemories.add(learnedMemoryRecord(characterId, heavy.account.id, `${heavy.account.username} ${topic.say(`${values[index % values.length]} ${index}`)}`, { importance: 1 + (index % 5) }));
    }
    const timings: number[] = [];
    // 1,000 questions after 50 not counted: a p99 of a few hundred samples is one garbage collection.
    for (let query = -50; query < 1_000; query += 1) {
      const began = performance.now();
      await words.about(owner.character, { id: places[0]!.dm, speakerAccountIds: [heavy.account.id] }, { participantType: 'account', participantId: heavy.account.id }, topics[(query + 50) % topics.length]!.ask, 8);
      if (query >= 0) timings.push(performance.now() - began);
    }

    return {
      people: people.length,
      messages,
      batches,
      learnedFacts: stored.length,
      statedFacts: people.length * topics.length,
      learnSeconds: round(learnMs / 1000, 2),
      extraction: { requests: spent.requests, promptTokens: spent.prompt, answerTokens: spent.answer, tokensPer100Messages: round(((spent.prompt + spent.answer) * 100) / messages, 0) },
      recallAt8: { words: await recallAt(words), wordsAndStandInEmbeddings: await recallAt(fused) },
      scope: { prompts, leakedMemories: leaks },
      retrievalWith1000Memories: { p50Ms: round(percentile(timings, 0.5), 2), p99Ms: round(percentile(timings, 0.99), 2) },
    };
  } finally {
    await store.close();
  }
}

const silent = { debug() {}, info() {}, warn() {}, error() {} };
