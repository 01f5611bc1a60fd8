#!/usr/bin/env python3
"""Generates asvcpp's synthetic demo corpus: VoxCeleb-shaped data spoken by espeak-ng voices.

    python3 tools/make_demo_corpus.py                       # default corpus into ./demo_data
    python3 tools/make_demo_corpus.py --small --out /tmp/c  # a tiny corpus for tests (seconds)

Every speaker is a fixed combination of an espeak-ng English accent (en-us, en-gb,
en-gb-scotland, ...), a voice variant (+m1..+m8, +f1..+f5, +klatt..) and a base pitch and speed.
Each "video" (session) of a speaker shifts speed, pitch, word gap and loudness a little and
passes the audio through its own channel (band limits, pink noise). Utterances are 2-8 s of
English sentences built from word lists, 16 kHz mono. Everything is derived from --seed, so the
same arguments always give the same corpus.

Layout (what asvcpp's VoxCeleb preparation reads):
    <out>/voxceleb1/wav/id1NNNN/<video>/00001.wav     held-out test speakers (16-bit PCM WAV)
    <out>/voxceleb1/veri_test.txt                     official format: "1 spk/vid/00001.wav spk/vid/00002.wav"
    <out>/voxceleb2/dev/aac/id0NNNN/<video>/00001.m4a training speakers (AAC in MP4 via ffmpeg)
    <out>/musan/{noise,music,speech}/demo/*.wav       a tiny synthetic MUSAN for stage 2 (augmentation):
                                                      coloured noises, chords, babble of other voices
    <out>/RIRS_NOISES/simulated_rirs/{smallroom,mediumroom}/rir_list and RoomNNN/RoomNNN-NNNNN.wav
                                                      synthetic room impulse responses (direct path
                                                      and an exponentially decaying tail), OpenSLR 28's layout
    <out>/sitw/{eval,dev}/audio/<file>.flac           Speakers in the Wild (SITW): 16 kHz mono FLAC, named like
                                                      SITW's files (5 lowercase letters, "aahtm.flac")
    <out>/sitw/{eval,dev}/lists/enroll-core.lst       "<model> audio/<file>.flac": one enrollment file per model
                                                      (that speaker alone, 4-8 s)
    <out>/sitw/{eval,dev}/keys/core-core.lst          "<model> audio/<file>.flac tgt|imp": every model against
                                                      every single-speaker test file
    <out>/sitw/{eval,dev}/keys/core-multi.lst         the same against the multi-speaker test files (the target
                                                      voice and another SITW voice as turns, or overlapped by the
                                                      other at a lower level; "tgt" when the model's speaker is
                                                      one of them) and, as in SITW, the single-speaker ones
Training and test speakers are disjoint; the babble voices are neither. The SITW speakers are
held-out voices of their own: other (accent, variant, pitch, speed) combinations than the
training and test speakers (pitch or speed clearly apart where they share an accent and variant)
and none of the babble variants. Each SITW file is a session of its own (the channel of a video).

Idempotent: the arguments are recorded in <out>/.demo_corpus.json (and <out>/.noise_corpora.json
for musan/ and RIRS_NOISES/, <out>/.sitw_corpus.json for sitw/, each made after the speech and
regenerated on its own), written last. Re-running with the same arguments returns at once; an
interrupted run (marker <out>/.demo_corpus.partial.json, <out>/.sitw_corpus.json.partial) is
completed, keeping the files already written (each file is written under a temporary name and
renamed, so a file that exists is complete); different arguments regenerate the parts they
change (the SITW options only sitw/; --sitw-speakers 0 removes it).

Needs Python 3 (standard library only) and the command-line tools of the Debian packages
espeak-ng and ffmpeg. --jobs runs that many espeak-ng/ffmpeg pipelines at once (threads that only
wait for the child processes, so a thread pool is a process pool here).
"""

import argparse
import concurrent.futures
import hashlib
import json
import math
import os
import random
import shutil
import subprocess
import sys
import struct
import threading
import time
import wave

GENERATOR_VERSION = 1
SAMPLE_RATE = 16000
MIN_SECONDS = 2.0
MAX_SECONDS = 8.0
MARKER = ".demo_corpus.json"
NOISE_MARKER = ".noise_corpora.json"
NOISE_GENERATOR_VERSION = 2
PARTIAL_MARKER = ".demo_corpus.partial.json"
SITW_MARKER = ".sitw_corpus.json"
SITW_GENERATOR_VERSION = 1
SITW_ENROLL_SECONDS = (4.0, 8.0)   # the enrollment files' length limits
SITW_MULTI_SECONDS = (4.0, 16.0)   # the multi-speaker test files' length limits
# A SITW voice sharing accent and variant with another voice differs from it by at least this
# much in pitch or in speed (a session shifts pitch by up to 5 and speed by up to 6 %).
SITW_PITCH_APART = 12
SITW_SPEED_APART = 25

ACCENTS = ["en-us", "en-gb", "en-gb-scotland", "en-gb-x-rp", "en-029", "en-gb-x-gbclan",
           "en-gb-x-gbcwmd", "en-us-nyc"]
VARIANTS = ["m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "f1", "f2", "f3", "f4", "f5",
            "klatt", "klatt2", "klatt3"]
BABBLE_VARIANTS = ["croak", "grandpa", "klatt4", "steph", "michel", "shelby", "travis", "victor"]

NAMES = ["Anna", "Peter", "Maria", "John", "Laura", "David", "Sarah", "Michael", "Emma", "Thomas",
         "Olivia", "James", "Sophie", "Daniel", "Grace", "Henry", "Alice", "Oscar", "Clara", "Felix"]
ADJECTIVES = ["small", "quiet", "bright", "heavy", "ancient", "curious", "gentle", "silver",
              "crowded", "distant", "golden", "narrow", "famous", "wooden", "frozen", "busy",
              "empty", "careful", "strange", "happy", "modern", "rusty", "tall", "warm"]
NOUNS = ["river", "garden", "teacher", "village", "machine", "window", "market", "doctor",
         "mountain", "letter", "engine", "kitchen", "station", "painter", "forest", "bridge",
         "library", "captain", "harbour", "museum", "farmer", "island", "camera", "violin",
         "journey", "castle", "student", "bakery", "tower", "meadow"]
VERBS_PAST = ["visited", "painted", "carried", "noticed", "repaired", "followed", "described",
              "opened", "watched", "collected", "remembered", "discovered", "cleaned", "measured",
              "ignored", "explained", "borrowed", "delivered", "photographed", "announced"]
VERBS_BASE = ["visit", "paint", "carry", "notice", "repair", "follow", "describe", "open",
              "watch", "collect", "remember", "discover", "clean", "measure", "explain", "borrow"]
ADVERBS = ["slowly", "quickly", "quietly", "carefully", "suddenly", "happily", "rarely",
           "eagerly", "calmly", "proudly", "early", "later"]
PREPOSITIONS = ["near", "behind", "beside", "under", "above", "across", "inside", "around",
                "beyond", "along"]
TIMES = ["on Monday", "last summer", "every morning", "after lunch", "in the evening",
         "before sunrise", "during the storm", "at midnight", "next week", "yesterday"]
NUMBERS = ["two", "three", "four", "five", "seven", "nine", "twelve", "fifteen", "twenty",
           "forty", "a hundred"]
CONNECTIVES = ["and then", "but", "because", "while", "so", "although"]

ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"


def log(message):
    print(f"[make_demo_corpus] {message}", flush=True)


def rng_for(*parts):
    """A random.Random seeded from the given parts (string seeding uses SHA-512: portable)."""
    return random.Random(":".join(str(p) for p in parts))


# ----------------------------------------------------------------------------------------------
# Text

def noun_phrase(r):
    if r.random() < 0.5:
        return f"the {r.choice(ADJECTIVES)} {r.choice(NOUNS)}"
    return f"the {r.choice(NOUNS)}"


def sentence(r):
    kind = r.randrange(6)
    if kind == 0:
        return (f"{noun_phrase(r).capitalize()} {r.choice(VERBS_PAST)} {noun_phrase(r)} "
                f"{r.choice(PREPOSITIONS)} {noun_phrase(r)}.")
    if kind == 1:
        return (f"{r.choice(NAMES)} {r.choice(ADVERBS)} {r.choice(VERBS_PAST)} {noun_phrase(r)} "
                f"{r.choice(TIMES)}.")
    if kind == 2:
        return (f"Why did {noun_phrase(r)} {r.choice(VERBS_BASE)} {noun_phrase(r)} "
                f"{r.choice(PREPOSITIONS)} {noun_phrase(r)}?")
    if kind == 3:
        return (f"{r.choice(NUMBERS).capitalize()} {r.choice(ADJECTIVES)} {r.choice(NOUNS)}s "
                f"arrived {r.choice(TIMES)}, {r.choice(CONNECTIVES)} {r.choice(NAMES)} "
                f"{r.choice(VERBS_PAST)} them.")
    if kind == 4:
        return (f"{r.choice(NAMES)} told {r.choice(NAMES)} that {noun_phrase(r)} was "
                f"{r.choice(ADJECTIVES)} {r.choice(TIMES)}.")
    return (f"{r.choice(TIMES).capitalize()} we {r.choice(VERBS_PAST)} {noun_phrase(r)} "
            f"{r.choice(PREPOSITIONS)} {noun_phrase(r)} {r.choice(ADVERBS)}.")


def utterance_text(r, words_per_minute, low=MIN_SECONDS + 0.3, high=MAX_SECONDS - 1.5):
    """Sentences whose spoken length should land between `low` and `high` seconds (by default
    within MIN_SECONDS and MAX_SECONDS)."""
    target_seconds = r.uniform(low, high)
    target_words = max(4, int(target_seconds * words_per_minute / 60.0))
    words = []
    while len(words) < target_words:
        words.extend(sentence(r).split())
    # Cut long tails at the target (a sentence may stop mid-way; it is still speech).
    return " ".join(words[: target_words + 3])


# ----------------------------------------------------------------------------------------------
# Speakers, videos, utterances

def make_speakers(args):
    """All speakers: the training ones (VoxCeleb2) first, then the test ones (VoxCeleb1)."""
    r = rng_for(args.seed, "speakers")
    combos = [(a, v) for a in ACCENTS for v in VARIANTS]
    r.shuffle(combos)
    total = args.speakers + args.test_speakers
    speakers = []
    used = set()
    for i in range(total):
        accent, variant = combos[i % len(combos)]
        while True:  # distinct full combinations even when (accent, variant) pairs repeat
            pitch = r.randrange(20, 81)
            speed = r.randrange(135, 196)
            if (accent, variant, pitch, speed) not in used:
                break
        used.add((accent, variant, pitch, speed))
        test = i >= args.speakers
        spk_id = f"id{10270 + i - args.speakers:05d}" if test else f"id{1 + i:05d}"
        speakers.append({"id": spk_id, "test": test, "accent": accent, "variant": variant,
                         "pitch": pitch, "speed": speed})
    return speakers


def make_session(r, spk):
    """A session (video) of speaker `spk`: its speech shifted a little, its own channel."""
    return {
        "speed": max(80, int(round(spk["speed"] * r.uniform(0.94, 1.06)))),
        "pitch": min(99, max(0, spk["pitch"] + r.randrange(-5, 6))),
        "gap": r.randrange(0, 4),
        "volume": round(r.uniform(0.5, 1.2), 3),
        "highpass": r.randrange(60, 300),
        "lowpass": r.randrange(3400, 7801),
        "noise": round(r.uniform(0.001, 0.01), 5),
    }


def video_id(r):
    first = r.choice(ALPHABET[:62])
    return first + "".join(r.choice(ALPHABET) for _ in range(10))


def make_jobs(args, out, speakers):
    jobs = []
    for spk in speakers:
        r = rng_for(args.seed, "videos", spk["id"])
        videos = set()
        for v in range(args.videos):
            vid = video_id(r)
            while vid in videos:
                vid = video_id(r)
            videos.add(vid)
            session = make_session(r, spk)
            for u in range(args.utts_per_video):
                ur = rng_for(args.seed, "utt", spk["id"], vid, u)
                name = f"{u + 1:05d}"
                if spk["test"]:
                    rel = f"{spk['id']}/{vid}/{name}.wav"
                    path = os.path.join(out, "voxceleb1", "wav", spk["id"], vid, name + ".wav")
                else:
                    rel = f"{spk['id']}/{vid}/{name}.m4a"
                    path = os.path.join(out, "voxceleb2", "dev", "aac", spk["id"], vid, name + ".m4a")
                jobs.append({
                    "speaker": spk, "video": vid, "rel": rel, "path": path, "session": session,
                    "text": utterance_text(ur, session["speed"]),
                    "noise_seed": ur.randrange(1, 2**31 - 1),
                })
    return jobs


# ----------------------------------------------------------------------------------------------
# Synthesis

def wav_seconds(data):
    """Duration of espeak-ng's --stdout WAV (its header sizes are placeholders: use the length)."""
    if len(data) < 44 or data[:4] != b"RIFF":
        raise RuntimeError("espeak-ng did not produce a WAV stream")
    rate = int.from_bytes(data[24:28], "little")
    channels = int.from_bytes(data[22:24], "little")
    bits = int.from_bytes(data[34:36], "little")
    return (len(data) - 44) / float(rate * channels * bits // 8)


def speak(job):
    """espeak-ng's WAV stream (22050 Hz) for one utterance and its duration in seconds."""
    spk, session = job["speaker"], job["session"]
    voice = f"{spk['accent']}+{spk['variant']}"
    espeak = ["espeak-ng", "-v", voice, "-s", str(session["speed"]), "-p", str(session["pitch"]),
              "-g", str(session["gap"]), "--stdout", job["text"]]
    speech = subprocess.run(espeak, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if speech.returncode != 0:
        raise RuntimeError(f"{' '.join(espeak)}: {speech.stderr.decode(errors='replace').strip()}")
    return speech.stdout, wav_seconds(speech.stdout)


def mix_graph(k, second):
    """ffmpeg filters that make [m<k>], one recording of two voices, from input k (the job's
    voice) and input k + 1 (`second`'s voice): "turns" puts them one after the other with a pause
    (the second voice first when second["first"]), "overlap" adds the second voice `delay`
    seconds in; the second voice at `gain`."""
    own = f"[{k}:a]aresample={SAMPLE_RATE}"
    other = f"[{k + 1}:a]aresample={SAMPLE_RATE},volume={second['gain']}"
    if second["mode"] == "overlap":
        return (f"{own}[a{k}];{other},adelay=delays={int(second['delay'] * 1000)}:all=1[b{k}];"
                f"[a{k}][b{k}]amix=inputs=2:duration=longest:normalize=0[m{k}]")
    first, then = (other, own) if second["first"] else (own, other)
    return (f"{first},apad=pad_dur={second['pause']}[a{k}];{then}[b{k}];"
            f"[a{k}][b{k}]concat=n=2:v=0:a=1[m{k}]")


def mixed_seconds(own, other, second):
    """The length of mix_graph's recording from the lengths of its two voices."""
    if second["mode"] == "overlap":
        return max(own, second["delay"] + other)
    return own + second["pause"] + other


def synthesize_video(video_jobs, scratch):
    """All utterances of one video: espeak-ng for each, then ONE ffmpeg run that applies the
    video's channel to every utterance and writes every output (ffmpeg's start-up cost dominates
    for short files). Each job brings its session, so a batch of files of different sessions
    works the same. A job may name a second voice of the same recording ("second": speaker,
    session and text like a job's, and how mix_graph joins the two) and length limits other
    than MIN_SECONDS..MAX_SECONDS ("seconds": (low, high)); .m4a is AAC, .flac FLAC, anything
    else 16-bit WAV. Files that already exist are kept. Returns the durations in seconds."""
    seconds, inputs, outputs, graph = [], [], [], []
    for job in video_jobs:
        low, high = job.get("seconds", (MIN_SECONDS, MAX_SECONDS))
        wav, secs = speak(job)
        second = job.get("second")
        if second:
            other_wav, other_secs = speak(second)
            secs = mixed_seconds(secs, other_secs, second)
        seconds.append(min(high, max(low, secs)))
        if os.path.exists(job["path"]):
            continue
        session, k = job["session"], len(inputs) // 2
        src = os.path.join(scratch, f"in{k}.wav")
        with open(src, "wb") as f:
            f.write(wav)
        inputs += ["-i", src]
        source = f"[{k}:a]"
        if second:
            other_src = os.path.join(scratch, f"in{k + 1}.wav")
            with open(other_src, "wb") as f:
                f.write(other_wav)
            inputs += ["-i", other_src]
            graph.append(mix_graph(k, second))
            source = f"[m{k}]"
        graph.append(
            f"{source}aresample={SAMPLE_RATE},highpass=f={session['highpass']},"
            f"lowpass=f={session['lowpass']},volume={session['volume']},"
            f"apad=whole_dur={low}[s{k}];"
            f"anoisesrc=r={SAMPLE_RATE}:c=pink:a={session['noise']}:seed={job['noise_seed']}[n{k}];"
            f"[s{k}][n{k}]amix=inputs=2:duration=first:normalize=0,atrim=end={high}[o{k}]")
        path = job["path"]
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.tmp{os.getpid()}{os.path.splitext(path)[1]}"
        if path.endswith(".m4a"):
            codec = ["-c:a", "aac", "-b:a", "48k", "-f", "mp4"]
        elif path.endswith(".flac"):
            codec = ["-c:a", "flac", "-sample_fmt", "s16", "-f", "flac"]
        else:
            codec = ["-c:a", "pcm_s16le", "-f", "wav"]
        outputs += (["-map", f"[o{k}]", "-ac", "1", "-ar", str(SAMPLE_RATE), "-fflags", "+bitexact",
                     "-flags:a", "+bitexact", "-map_metadata", "-1"] + codec + [tmp])
        job["tmp"] = tmp
    if not inputs:
        return seconds
    ffmpeg = (["ffmpeg", "-nostdin", "-v", "error", "-y"] + inputs +
              ["-filter_complex", ";".join(graph)] + outputs)
    result = subprocess.run(ffmpeg, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    pending = [j for j in video_jobs if "tmp" in j]
    if result.returncode != 0:
        for j in pending:
            if os.path.exists(j["tmp"]):
                os.remove(j["tmp"])
        raise RuntimeError(f"ffmpeg failed for {os.path.dirname(video_jobs[0]['path'])}: "
                           f"{result.stderr.decode(errors='replace').strip()}")
    for j in pending:
        os.replace(j.pop("tmp"), j["path"])
    return seconds


def synthesize_batches(batches, workers, scratch_root, noun):
    """synthesize_video for every batch (a list of jobs) on `workers` threads, each batch in a
    scratch folder of its own under `scratch_root`, logging progress in `noun` (e.g. "utterances")
    about every 5 s. Returns the durations of each batch's jobs, or None after logging the first
    error (the batches not started are cancelled)."""
    total = sum(len(b) for b in batches)
    seconds = [None] * len(batches)
    progress = {"done": 0, "last": 0.0}
    lock = threading.Lock()
    start = time.time()
    shutil.rmtree(scratch_root, ignore_errors=True)

    def run(n, batch):
        scratch = os.path.join(scratch_root, str(n))
        os.makedirs(scratch, exist_ok=True)
        durations = synthesize_video(batch, scratch)
        shutil.rmtree(scratch, ignore_errors=True)
        with lock:
            seconds[n] = durations
            progress["done"] += len(batch)
            now = time.time()
            if now - progress["last"] >= 5.0 or progress["done"] == total:
                progress["last"] = now
                elapsed = now - start
                rate = progress["done"] / max(elapsed, 1e-9)
                eta = (total - progress["done"]) / max(rate, 1e-9)
                log(f"{progress['done']}/{total} {noun}, {rate:.1f}/s, "
                    f"elapsed {elapsed:.0f} s, ETA {eta:.0f} s")

    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(run, n, batch) for n, batch in enumerate(batches)]
        for f in concurrent.futures.as_completed(futures):
            error = f.exception()
            if error is not None:
                for other in futures:
                    other.cancel()
                log(f"error: {error}")
                return None
    shutil.rmtree(scratch_root, ignore_errors=True)
    return seconds


# ----------------------------------------------------------------------------------------------
# Trials

def make_trials(args, jobs):
    """Balanced target/non-target trials over the test speakers, VoxCeleb style: target pairs
    come from different videos of one speaker."""
    test = [j for j in jobs if j["speaker"]["test"]]
    r = rng_for(args.seed, "trials")
    targets = [(a["rel"], b["rel"]) for i, a in enumerate(test) for b in test[i + 1:]
               if a["speaker"]["id"] == b["speaker"]["id"] and a["video"] != b["video"]]
    n = min(args.trials // 2, len(targets))
    chosen_targets = r.sample(targets, n)
    nontargets = set()
    if len({j["speaker"]["id"] for j in test}) > 1:
        while len(nontargets) < n:
            a, b = r.choice(test), r.choice(test)
            if a["speaker"]["id"] != b["speaker"]["id"]:
                nontargets.add((a["rel"], b["rel"]))
    trials = [("1", a, b) for a, b in chosen_targets] + [("0", a, b) for a, b in sorted(nontargets)]
    r.shuffle(trials)
    return trials


def write_atomic(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)



# ----------------------------------------------------------------------------------------------
# Noise corpora for augmentation (stage 2): MUSAN's and RIRS_NOISES's layouts, synthetic content

def write_wav(path, samples):
    """16-bit mono WAV at SAMPLE_RATE from floats in the int16 range (clipped), atomically."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}.wav"
    clipped = [max(-32768, min(32767, int(round(v)))) for v in samples]
    with wave.open(tmp, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(struct.pack(f"<{len(clipped)}h", *clipped))
    os.replace(tmp, path)


def coloured_noise(r, seconds, colour):
    """White, pink-ish (one-pole low-passed) or brown-ish noise with slow level changes."""
    n = int(seconds * SAMPLE_RATE)
    pole = {"white": 0.0, "pink": 0.9, "brown": 0.99}[colour]
    level, y, out = r.uniform(1500, 4000), 0.0, []
    for i in range(n):
        if i % 1600 == 0:
            level *= r.uniform(0.8, 1.25)
        y = pole * y + (1.0 - pole) * r.gauss(0.0, 1.0)
        out.append(level * y / max(1.0 - pole, 0.05))
    return out


def chords(r, seconds):
    """A sequence of half-second to one-second chords of three notes with two harmonics each."""
    out = []
    while len(out) < seconds * SAMPLE_RATE:
        root = 110.0 * 2 ** (r.randrange(0, 24) / 12.0)
        notes = [root, root * 2 ** (4 / 12.0), root * 2 ** (7 / 12.0)]
        n = int(r.uniform(0.5, 1.0) * SAMPLE_RATE)
        for i in range(n):
            t = i / SAMPLE_RATE
            env = min(1.0, 20 * t) * (1.0 - 0.5 * i / n)
            out.append(env * sum(2000.0 * math.sin(2 * math.pi * f * t) +
                                 600.0 * math.sin(4 * math.pi * f * t) for f in notes))
    return out[: int(seconds * SAMPLE_RATE)]


def room_impulse_response(r, rt60):
    """Direct path after a short delay, then a decaying Gaussian tail reaching -60 dB at rt60 s,
    kept below the direct path (which wav-reverberate finds as the largest sample)."""
    delay = r.randrange(16, 160)
    n = int((rt60 + 0.05) * SAMPLE_RATE)
    decay = 6.9078 / (rt60 * SAMPLE_RATE)  # ln(1000): amplitude -60 dB after rt60
    h = [0.0] * n
    h[delay] = 30000.0
    for i in range(delay + 8, n):
        h[i] = max(-20000.0, min(20000.0, 9000.0 * r.gauss(0.0, 1.0) * math.exp(-decay * (i - delay))))
    return h


def babble_speech(r, voice, path, scratch):
    """espeak-ng reading several sentences in `voice`, resampled to SAMPLE_RATE by ffmpeg."""
    text = " ".join(sentence(r) for _ in range(6))
    raw = os.path.join(scratch, os.path.basename(path) + ".espeak.wav")
    speech = subprocess.run(["espeak-ng", "-v", voice, "-s", str(r.randrange(140, 190)), "-w", raw, text],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    if speech.returncode != 0:
        raise RuntimeError(f"espeak-ng -v {voice}: {speech.stderr.decode(errors='replace').strip()}")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}.wav"
    result = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", raw, "-ac", "1", "-ar",
                             str(SAMPLE_RATE), "-c:a", "pcm_s16le", "-fflags", "+bitexact", "-flags:a", "+bitexact",
                             "-map_metadata", "-1", tmp], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            check=False)
    if result.returncode != 0:
        raise RuntimeError(f"ffmpeg failed for {path}: {result.stderr.decode(errors='replace').strip()}")
    os.replace(tmp, path)


def make_noise_corpora(args, out):
    """<out>/musan and <out>/RIRS_NOISES (see the module comment); idempotent through NOISE_MARKER.
    Returns 0, or 2 when the folders exist but were not made by this tool."""
    settings = {"version": NOISE_GENERATOR_VERSION, "seed": args.seed, "small": args.small}
    marker = os.path.join(out, NOISE_MARKER)
    done = read_json(marker)
    if done and done.get("settings") == settings and not args.force:
        return 0
    folders = [os.path.join(out, d) for d in ("musan", "RIRS_NOISES")]
    partial = marker + ".partial"
    if done is None and any(os.path.exists(d) for d in folders) and not os.path.exists(partial):
        log(f"{out} holds musan/ or RIRS_NOISES/ folders not made by this tool; refusing to overwrite them")
        return 2
    missing = [tool for tool in ("espeak-ng", "ffmpeg") if shutil.which(tool) is None]
    if missing:
        log(f"missing tools: {', '.join(missing)} (Debian packages espeak-ng and ffmpeg)")
        return 2
    # The partial marker first, then the old marker goes: an interrupted run is redone, never
    # taken for a complete one.
    write_atomic(partial, "{}\n")
    if os.path.exists(marker):
        os.remove(marker)
    for d in folders:
        shutil.rmtree(d, ignore_errors=True)
    start = time.time()
    counts = (3, 2, 3, 2, 2) if args.small else (10, 6, 8, 5, 4)
    n_noise, n_music, n_speech, n_rooms, n_rirs = counts
    musan = os.path.join(out, "musan")
    for i in range(n_noise):
        r = rng_for(args.seed, "musan-noise", i)
        colour = ("white", "pink", "brown")[i % 3]
        write_wav(os.path.join(musan, "noise", "demo", f"noise-demo-{i:04d}.wav"),
                  coloured_noise(r, r.uniform(1.0, 4.0), colour))
    for i in range(n_music):
        r = rng_for(args.seed, "musan-music", i)
        write_wav(os.path.join(musan, "music", "demo", f"music-demo-{i:04d}.wav"), chords(r, r.uniform(6.0, 12.0)))
    scratch = os.path.join(out, ".scratch-noise")
    os.makedirs(scratch, exist_ok=True)
    for i in range(n_speech):
        r = rng_for(args.seed, "musan-speech", i)
        # Variants no training or test speaker uses (VARIANTS): other people talking.
        voice = f"{ACCENTS[i % len(ACCENTS)]}+{BABBLE_VARIANTS[i % len(BABBLE_VARIANTS)]}"
        babble_speech(r, voice, os.path.join(musan, "speech", "demo", f"speech-demo-{i:04d}.wav"), scratch)
    shutil.rmtree(scratch, ignore_errors=True)
    rirs = os.path.join(out, "RIRS_NOISES", "simulated_rirs")
    for room_set, (rt_low, rt_high) in (("smallroom", (0.15, 0.35)), ("mediumroom", (0.35, 0.7))):
        lines = []
        for room in range(1, n_rooms + 1):
            r = rng_for(args.seed, room_set, room)
            rt60 = r.uniform(rt_low, rt_high)
            for k in range(1, n_rirs + 1):
                name = f"Room{room:03d}-{k:05d}"
                write_wav(os.path.join(rirs, room_set, f"Room{room:03d}", name + ".wav"),
                          room_impulse_response(r, rt60))
                lines.append(f"--rir-id {room_set}-{name} --room-id {room_set}-Room{room:03d} "
                             f"RIRS_NOISES/simulated_rirs/{room_set}/Room{room:03d}/{name}.wav\n")
        write_atomic(os.path.join(rirs, room_set, "rir_list"), "".join(lines))
    write_atomic(marker, json.dumps({"settings": settings}, indent=1) + "\n")
    os.remove(partial)
    log(f"noise corpora in {time.time() - start:.1f} s: MUSAN {n_noise} noises, {n_music} music, "
        f"{n_speech} speech; RIRS_NOISES 2 x {n_rooms * n_rirs} room impulse responses")
    return 0

# ----------------------------------------------------------------------------------------------
# Speakers in the Wild (SITW): its own layout, held-out voices

def sitw_counts(args):
    """Test files per SITW speaker: (single-speaker "core" ones, multi-speaker ones)."""
    return (2, 1) if args.small else (4, 2)


def sitw_settings(args):
    """What the SITW part depends on (its voices avoid the speech part's: those settings too)."""
    core, multi = sitw_counts(args)
    return {"version": SITW_GENERATOR_VERSION, "seed": args.seed, "speakers": args.speakers,
            "test_speakers": args.test_speakers, "sitw_speakers": args.sitw_speakers,
            "sitw_dev_speakers": args.sitw_dev_speakers, "core_tests": core, "multi_tests": multi}


def make_sitw_speakers(args, taken):
    """The SITW speakers, eval's then dev's, from a random stream of their own: voices of
    VARIANTS (so none of the babble voices) whose (accent, variant, pitch, speed) is new. The
    (accent, variant) pairs no speaker of `taken` (the training and test speakers) uses come
    first; a voice sharing its pair with voices already made (VoxCeleb's or SITW's) is the
    farthest of 20 random (pitch, speed) draws from them and keeps at least SITW_PITCH_APART in
    pitch or SITW_SPEED_APART in speed from each. Only when no pair leaves room for that (far more
    speakers than the demo has) is the farthest voice drawn taken, a different combination still."""
    r = rng_for(args.seed, "sitw-speakers")
    near = {}
    for s in taken:
        near.setdefault((s["accent"], s["variant"]), []).append((s["pitch"], s["speed"]))
    used = {(s["accent"], s["variant"], s["pitch"], s["speed"]) for s in taken}
    pairs = [(a, v) for a in ACCENTS for v in VARIANTS]
    r.shuffle(pairs)
    pairs.sort(key=lambda pair: len(near.get(pair, [])))  # stable: the unused pairs first, shuffled

    def distance(pair, voice):
        """From the nearest voice of `pair`, in units of the margins (>= 1: apart)."""
        return min((max(abs(voice[0] - p) / SITW_PITCH_APART, abs(voice[1] - s) / SITW_SPEED_APART)
                    for p, s in near.get(pair, [])), default=math.inf)

    speakers, next_pair = [], 0
    for part, count, first_model in (("eval", args.sitw_speakers, 60001),
                                     ("dev", args.sitw_dev_speakers, 10001)):
        for i in range(count):
            voice, farthest = None, (0.0, None)
            for step in range(len(pairs)):
                pair = pairs[(next_pair + step) % len(pairs)]
                draws = [(r.randrange(20, 81), r.randrange(135, 196)) for _ in range(20)]
                best = max(draws, key=lambda d: distance(pair, d))  # the first of equals
                if distance(pair, best) >= 1.0:
                    voice = pair + best
                    next_pair += step + 1
                    break
                if distance(pair, best) > farthest[0]:
                    farthest = (distance(pair, best), pair + best)
            if voice is None:
                voice = farthest[1]
                next_pair += 1
            while voice is None or voice in used:  # every draw was a voice already made
                accent, variant = pairs[next_pair % len(pairs)]
                next_pair += 1
                voice = (accent, variant, r.randrange(20, 81), r.randrange(135, 196))
            used.add(voice)
            near.setdefault(voice[:2], []).append(voice[2:])
            speakers.append({"model": f"{first_model + i}", "part": part, "accent": voice[0],
                             "variant": voice[1], "pitch": voice[2], "speed": voice[3]})
    return speakers


def make_sitw_jobs(args, out, speakers):
    """The SITW files of every part: {part: [job]}. Per speaker (model) an enrollment file (that
    speaker alone, SITW_ENROLL_SECONDS), core test files (alone, 2-8 s) and multi-speaker test
    files (with another speaker of the part: turns or overlapped at a lower level,
    SITW_MULTI_SECONDS), each file a session of its own. File names: 5 lowercase letters, from one
    stream for both parts, so unique across the SITW part."""
    core_tests, multi_tests = sitw_counts(args)
    names_r, names = rng_for(args.seed, "sitw-names"), set()
    parts = {}
    for part in ("eval", "dev"):
        members = [s for s in speakers if s["part"] == part]
        if not members:
            continue
        jobs = []
        for spk in members:
            r = rng_for(args.seed, "sitw-files", spk["model"])
            for kind, count in (("enroll", 1), ("core", core_tests), ("multi", multi_tests)):
                for _ in range(count):
                    session = make_session(r, spk)
                    job = {"speaker": spk, "kind": kind, "session": session,
                           "noise_seed": r.randrange(1, 2**31 - 1)}
                    if kind == "enroll":
                        job["text"] = utterance_text(r, session["speed"], 5.0, 7.5)
                        job["seconds"] = SITW_ENROLL_SECONDS
                    else:
                        job["text"] = utterance_text(r, session["speed"], 3.0, 6.5)
                    if kind == "multi":
                        other = r.choice([s for s in members if s is not spk])
                        other_session = make_session(r, other)
                        mode = r.choice(("turns", "overlap"))
                        gain = r.uniform(0.25, 0.45) if mode == "overlap" else r.uniform(0.7, 1.0)
                        job["second"] = {
                            "speaker": other, "session": other_session,
                            "text": utterance_text(r, other_session["speed"], 2.0, 4.5),
                            "mode": mode, "first": r.random() < 0.5,
                            "pause": round(r.uniform(0.2, 0.8), 2),
                            "delay": round(r.uniform(0.5, 2.0), 2),
                            "gain": round(gain, 3),
                        }
                        job["seconds"] = SITW_MULTI_SECONDS
                    jobs.append(job)
        for job in jobs:
            name = "".join(names_r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(5))
            while name in names:
                name = "".join(names_r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(5))
            names.add(name)
            job["rel"] = f"audio/{name}.flac"
            job["path"] = os.path.join(out, "sitw", part, "audio", name + ".flac")
        parts[part] = jobs
    return parts


def sitw_voices(job):
    """The models (speakers) heard in a SITW file."""
    return [job["speaker"]["model"]] + ([job["second"]["speaker"]["model"]] if "second" in job else [])


def sitw_lists(jobs):
    """enroll-core.lst, core-core.lst and core-multi.lst of one part as lists of lines, sorted by
    model and file: core-core every model against every core test file, core-multi every model
    against every multi-speaker and every core test file; "tgt" when the model's speaker is heard."""
    enroll = sorted((j["speaker"]["model"], j["rel"]) for j in jobs if j["kind"] == "enroll")
    core = [j for j in jobs if j["kind"] == "core"]
    multi = [j for j in jobs if j["kind"] == "multi"]

    def key(tests):
        return sorted((model, t["rel"], "tgt" if model in sitw_voices(t) else "imp")
                      for model, _ in enroll for t in tests)

    return ([" ".join(line) for line in enroll], [" ".join(line) for line in key(core)],
            [" ".join(line) for line in key(multi + core)])


def remove_sitw(out, marker, partial):
    """Removes the SITW part made by this tool: the partial marker first, so that a part half
    removed is still ours."""
    write_atomic(partial, "{}\n")
    if os.path.exists(marker):
        os.remove(marker)
    shutil.rmtree(os.path.join(out, "sitw"), ignore_errors=True)
    os.remove(partial)


def make_sitw_corpus(args, out):
    """<out>/sitw (see the module comment); idempotent through SITW_MARKER, independently of the
    speech and noise parts. Returns 0, 1 when a pipeline failed, or 2 when sitw/ exists but was
    not made by this tool or a tool is missing."""
    marker = os.path.join(out, SITW_MARKER)
    partial = marker + ".partial"
    folder = os.path.join(out, "sitw")
    done, started = read_json(marker), read_json(partial)
    ours = done is not None or started is not None
    if args.sitw_speakers == 0:
        if ours:
            log("removing the SITW part (--sitw-speakers 0)")
            remove_sitw(out, marker, partial)
        return 0
    settings = sitw_settings(args)
    if done and done.get("settings") == settings and not args.force:
        return 0
    if os.path.exists(folder) and not ours:
        log(f"{out} holds a sitw/ folder not made by this tool; refusing to overwrite it")
        return 2
    missing = [tool for tool in ("espeak-ng", "ffmpeg") if shutil.which(tool) is None]
    if missing:
        log(f"missing tools: {', '.join(missing)} (Debian packages espeak-ng and ffmpeg)")
        return 2
    resume = (not args.force and done is None and (started or {}).get("settings") == settings
              and os.path.isdir(folder))
    # An empty partial marker first, then the old marker goes and old files with it; the settings
    # go into the partial marker only then: an interrupted run is redone or completed, never
    # taken for a complete one, and never completed with files of other settings.
    write_atomic(partial, "{}\n")
    if os.path.exists(marker):
        os.remove(marker)
    if resume:
        log("completing an interrupted SITW run")
        for root, _, files in os.walk(folder):
            for name in files:
                if ".tmp" in name:  # left by the interrupted run
                    os.remove(os.path.join(root, name))
    elif os.path.exists(folder):
        log("removing the previous SITW part (different settings or --force)")
        shutil.rmtree(folder)
    write_atomic(partial, json.dumps({"settings": settings}, indent=1) + "\n")

    start = time.time()
    speakers = make_sitw_speakers(args, make_speakers(args))
    parts = make_sitw_jobs(args, out, speakers)
    n_files = sum(len(jobs) for jobs in parts.values())
    log(f"SITW: {args.sitw_speakers} eval and {args.sitw_dev_speakers} dev speakers, {n_files} files, "
        f"{args.jobs} jobs -> {folder}")
    # One ffmpeg run per speaker (its files, each with its own session).
    batches = {}
    for jobs in parts.values():
        for job in jobs:
            batches.setdefault(job["speaker"]["model"], []).append(job)
    durations = synthesize_batches(list(batches.values()), args.jobs, os.path.join(out, ".scratch-sitw"),
                                   "SITW files")
    if durations is None:
        return 1
    seconds = {}
    for batch, batch_seconds in zip(batches.values(), durations):
        for job, secs in zip(batch, batch_seconds):
            seconds[job["rel"], job["speaker"]["part"]] = secs

    summary, files = {}, {}
    for part, jobs in parts.items():
        enroll, core_core, core_multi = sitw_lists(jobs)
        root = os.path.join(folder, part)
        write_atomic(os.path.join(root, "lists", "enroll-core.lst"), "".join(f"{l}\n" for l in enroll))
        write_atomic(os.path.join(root, "keys", "core-core.lst"), "".join(f"{l}\n" for l in core_core))
        write_atomic(os.path.join(root, "keys", "core-multi.lst"), "".join(f"{l}\n" for l in core_multi))
        summary[part] = {
            "models": len(enroll), "files": len(jobs),
            "core_tests": sum(1 for j in jobs if j["kind"] == "core"),
            "multi_tests": sum(1 for j in jobs if j["kind"] == "multi"),
            "core_core_trials": len(core_core),
            "core_core_targets": sum(1 for l in core_core if l.endswith(" tgt")),
            "core_multi_trials": len(core_multi),
            "core_multi_targets": sum(1 for l in core_multi if l.endswith(" tgt")),
            "hours": round(sum(seconds[j["rel"], part] for j in jobs) / 3600.0, 4)}
        files[part] = {j["rel"][len("audio/"):]: {
            "kind": j["kind"], "voices": sitw_voices(j),
            **({"mode": j["second"]["mode"]} if "second" in j else {}),
            "seconds": round(seconds[j["rel"], part], 2)} for j in jobs}
    summary["seconds_to_generate"] = round(time.time() - start, 1)
    speakers_table = {s["model"]: {k: s[k] for k in ("part", "accent", "variant", "pitch", "speed")}
                      for s in speakers}
    write_atomic(marker, json.dumps({"settings": settings, "summary": summary, "speakers": speakers_table,
                                     "files": files}, indent=1) + "\n")
    os.remove(partial)
    log(f"SITW in {summary['seconds_to_generate']} s: " + "; ".join(
        f"{part} {s['models']} models, {s['files']} files, {s['core_core_trials']} core-core and "
        f"{s['core_multi_trials']} core-multi trials" for part, s in summary.items() if part in parts))
    return 0


# ----------------------------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="demo_data", help="output folder (default: demo_data)")
    p.add_argument("--speakers", type=int, default=100, help="training speakers (VoxCeleb2 layout)")
    p.add_argument("--test-speakers", type=int, default=20, help="test speakers (VoxCeleb1 layout)")
    p.add_argument("--videos", type=int, default=4, help="videos (sessions) per speaker")
    p.add_argument("--utts-per-video", type=int, default=4, help="utterances per video")
    p.add_argument("--trials", type=int, default=3000, help="trials in veri_test.txt (half target)")
    p.add_argument("--seed", type=int, default=2024, help="random seed")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel pipelines")
    p.add_argument("--sitw-speakers", type=int, default=None,
                   help="speakers (models) of the SITW eval part, each with an enrollment file, 4 "
                        "single-speaker and 2 multi-speaker test files (default 20; 3 with --small); "
                        "0: no SITW part at all")
    p.add_argument("--sitw-dev-speakers", type=int, default=None,
                   help="speakers (models) of the SITW dev part (default 10; 2 with --small); 0: no "
                        "dev part")
    p.add_argument("--small", action="store_true",
                   help="tiny corpus for tests: 5+3 speakers, 2 videos, 2 utterances, 40 trials; "
                        "SITW 3+2 speakers with 2 single-speaker and 1 multi-speaker test file each")
    p.add_argument("--force", action="store_true", help="regenerate even if up to date")
    args = p.parse_args(argv)
    if args.small:
        args.speakers, args.test_speakers, args.videos, args.utts_per_video, args.trials = 5, 3, 2, 2, 40
    if args.sitw_speakers == 0 and args.sitw_dev_speakers:
        p.error("--sitw-dev-speakers needs an SITW part (--sitw-speakers 0 turns it off)")
    if args.sitw_speakers is None:
        args.sitw_speakers = 3 if args.small else 20
    if args.sitw_dev_speakers is None:
        args.sitw_dev_speakers = 0 if args.sitw_speakers == 0 else 2 if args.small else 10
    for name in ("sitw_speakers", "sitw_dev_speakers"):
        if getattr(args, name) < 0 or getattr(args, name) == 1:
            p.error(f"--{name.replace('_', '-')} must be 0 (none) or at least 2 (non-target trials "
                    "need two speakers)")
    for name in ("speakers", "videos", "utts_per_video", "jobs"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.test_speakers < 2:
        p.error("--test-speakers must be at least 2 (non-target trials need two speakers)")
    if args.videos < 2:
        p.error("--videos must be at least 2 (target trials pair different videos)")
    return args


def settings_of(args):
    return {"version": GENERATOR_VERSION, "speakers": args.speakers,
            "test_speakers": args.test_speakers, "videos": args.videos,
            "utts_per_video": args.utts_per_video, "trials": args.trials, "seed": args.seed}


def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def main(argv):
    args = parse_args(argv)
    out = os.path.abspath(args.out)
    settings = settings_of(args)
    marker, partial = os.path.join(out, MARKER), os.path.join(out, PARTIAL_MARKER)

    done = read_json(marker)
    if done and done.get("settings") == settings and not args.force:
        s = done["summary"]
        log(f"{out} is up to date ({s['speakers']} speakers, {s['utterances']} utterances, "
            f"{s['hours']:.2f} h)")
        return make_noise_corpora(args, out) or make_sitw_corpus(args, out)

    missing = [tool for tool in ("espeak-ng", "ffmpeg") if shutil.which(tool) is None]
    if missing:
        log(f"missing tools: {', '.join(missing)} (Debian packages espeak-ng and ffmpeg)")
        return 2

    started = read_json(partial)
    ours = done is not None or started is not None
    generated = [os.path.join(out, d) for d in ("voxceleb1", "voxceleb2")]
    if any(os.path.exists(d) for d in generated):
        if not ours:
            log(f"{out} holds voxceleb1/ or voxceleb2/ folders not made by this tool; refusing "
                "to overwrite them (choose another --out)")
            return 2
        if args.force or done is not None or (started or {}).get("settings") != settings:
            log("removing the previous corpus (different settings or --force)")
            for d in generated:
                shutil.rmtree(d, ignore_errors=True)
        else:
            log("completing an interrupted run")
    if os.path.exists(marker):
        os.remove(marker)
    write_atomic(partial, json.dumps({"settings": settings}, indent=1) + "\n")

    start = time.time()
    speakers = make_speakers(args)
    jobs = make_jobs(args, out, speakers)
    log(f"{len(speakers)} speakers ({args.speakers} training, {args.test_speakers} test), "
        f"{len(jobs)} utterances, {args.jobs} jobs -> {out}")

    videos = {}
    for job in jobs:
        videos.setdefault((job["speaker"]["id"], job["video"]), []).append(job)
    durations = synthesize_batches(list(videos.values()), args.jobs, os.path.join(out, ".scratch"),
                                   "utterances")
    if durations is None:
        return 1
    seconds = [d for batch in durations for d in batch]

    trials = make_trials(args, jobs)
    write_atomic(os.path.join(out, "voxceleb1", "veri_test.txt"),
                 "".join(f"{label} {a} {b}\n" for label, a, b in trials))

    fingerprint = hashlib.sha256(
        "\n".join(f"{j['rel']} {j['text']}" for j in jobs).encode()).hexdigest()
    summary = {"speakers": len(speakers), "training_speakers": args.speakers,
               "test_speakers": args.test_speakers, "utterances": len(jobs),
               "training_utterances": sum(1 for j in jobs if not j["speaker"]["test"]),
               "test_utterances": sum(1 for j in jobs if j["speaker"]["test"]),
               "trials": len(trials), "hours": round(sum(seconds) / 3600.0, 4),
               "seconds_to_generate": round(time.time() - start, 1), "text_sha256": fingerprint}
    speakers_table = {s["id"]: {k: s[k] for k in ("test", "accent", "variant", "pitch", "speed")}
                      for s in speakers}
    write_atomic(marker, json.dumps({"settings": settings, "summary": summary,
                                     "speakers": speakers_table}, indent=1) + "\n")
    os.remove(partial)
    log(f"done in {summary['seconds_to_generate']} s: {summary['speakers']} speakers, "
        f"{summary['utterances']} utterances ({summary['training_utterances']} m4a, "
        f"{summary['test_utterances']} wav), {summary['hours']:.2f} h, {len(trials)} trials")
    return make_noise_corpora(args, out) or make_sitw_corpus(args, out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
