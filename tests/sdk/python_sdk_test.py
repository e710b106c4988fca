"""The Python SDK end to end against a real `tessera serve --grpc` (address in
argv[1]): turns that keep the history, fork, errors as exceptions with the
gRPC status, a loop left early, many threads at once."""

import sys
import threading
import time
import unittest

import grpc

from tessera_client import Client, TesseraError

ADDRESS = sys.argv.pop(1)


class PythonSdk(unittest.TestCase):
    def setUp(self):
        self.client = Client(ADDRESS)

    def tearDown(self):
        self.client.close()

    def test_the_seed_is_reported_and_the_history_shown_when_asked(self):
        session = self.client.create_session(temperature=1.0)
        self.assertIsNotNone(session.seed)
        self.assertEqual(session.info().seed, session.seed)
        prompt = self.client.tokenize("Once upon a time", add_bos=True)
        session.append(prompt)
        reply = [t.id for t in session.generate(max_tokens=12, ignore_eos=True)]
        self.assertEqual(list(session.info(include_history=True).history), prompt + reply)
        self.assertEqual(len(session.info().history), 0)
        replay = self.client.create_session(temperature=1.0, seed=session.seed)
        replay.append(prompt)
        self.assertEqual([t.id for t in replay.generate(max_tokens=12, ignore_eos=True)], reply)

    def test_turns_keep_the_history(self):
        session = self.client.create_session(temperature=0.0)
        history = self.client.tokenize("Once upon a time", add_bos=True)
        self.assertEqual(session.append(history), len(history))
        for turn in range(2):
            reply = [t.id for t in session.generate(max_tokens=10, ignore_eos=True)]
            self.assertEqual(len(reply), 10)
            self.assertEqual(session.last_end.stop_reason, "max_tokens")
            history += reply
            info = session.info()
            self.assertEqual(info.history_tokens, len(history))
            self.assertEqual(info.cached_tokens, len(history) - 1)  # never fed again
            more = self.client.tokenize(" Then")
            session.append(more)
            history += more
        fork = session.fork()
        a = [t.id for t in session.generate(max_tokens=8, ignore_eos=True)]
        b = [t.id for t in fork.generate(max_tokens=8, ignore_eos=True)]
        self.assertEqual(a, b)
        session.close()
        fork.close()

    def test_errors_carry_the_grpc_status(self):
        session = self.client.create_session()
        with self.assertRaises(TesseraError) as raised:
            session.append([1, 1 << 20])
        self.assertEqual(raised.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("outside this model's vocabulary", raised.exception.details)
        session.close()
        with self.assertRaises(TesseraError) as raised:
            session.info()
        self.assertEqual(raised.exception.code, grpc.StatusCode.NOT_FOUND)
        self.assertIn("closed by its owner", raised.exception.details)
        # A proposer the server does not run; the one it runs is fine.
        with self.assertRaises(TesseraError) as raised:
            self.client.create_session(proposer="tree")
        self.assertEqual(raised.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("is not one this server runs", raised.exception.details)
        self.client.create_session(proposer="none").close()

    def test_leaving_the_loop_early_cancels_the_turn(self):
        session = self.client.create_session()
        session.append(self.client.tokenize("Once upon a time", add_bos=True))
        for i, _ in enumerate(session.generate(max_tokens=100000, ignore_eos=True)):
            if i == 3:
                break
        for _ in range(500):  # the session takes appends once its turn ended
            try:
                session.append([1])
                break
            except TesseraError as error:
                self.assertEqual(error.code, grpc.StatusCode.FAILED_PRECONDITION)
                time.sleep(0.01)
        self.assertFalse(session.info().generating)
        session.close()

    def test_threads_each_get_what_they_get_alone(self):
        def run(seed, out):
            with Client(ADDRESS) as client:
                session = client.create_session(temperature=0.8, seed=seed)
                session.append(client.tokenize("The dog", add_bos=True))
                out[seed] = [t.id for t in session.generate(max_tokens=12, ignore_eos=True)]
                session.close()
        together = {}
        threads = [threading.Thread(target=run, args=(s, together)) for s in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for seed in range(8):
            alone = {}
            run(seed, alone)
            self.assertEqual(together[seed], alone[seed], f"seed {seed}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
