# The load writer of the replication tests, run in the client image by
# workload.ts's writer Pod. One insert at a time, each in a session of its own
# through the client Service (as the shell loop with psql and mariadb did,
# without a process per statement: that loop took a sixth of a core per writer
# on the 2-core CI machine, a share the scenarios beside it needed).
#
# What it prints, one line each (parseWriterLog reads them):
#   start MS                      the loop began
#   fail ID MS CODE [MESSAGE]     an attempt failed: CODE 124 when it timed out (no session
#                                 within CONNECT_TIMEOUT, or no answer within the statement
#                                 timeout), 2 when the session was refused, 1 for an error
#                                 answer; MESSAGE when it differs from the previous one
#   table MS                      `create table if not exists` succeeded
#   ack ID MS                     the insert of ID committed: printed only after the commit returned
# A failed insert is retried with the same id, and the insert is idempotent, so
# ids stay contiguous and each acknowledged id is one row.
import os
import select
import socket
import sys
import time
from urllib.parse import urlsplit

ENGINE = os.environ["WRITER_ENGINE"]
TIMEOUT = float(os.environ["WRITER_STATEMENT_TIMEOUT"])
PAUSE = float(os.environ.get("WRITER_PAUSE") or 0)
# How long opening a session may take before the attempt counts as timed out.
CONNECT_TIMEOUT = float(os.environ.get("WRITER_CONNECT_TIMEOUT") or 2)
CREATE = os.environ["WRITER_CREATE"]
INSERT = os.environ["WRITER_INSERT"]  # with {id} where the id goes


class TimedOut(Exception):
    pass


class NoSession(Exception):
    pass


def now():
    return time.time_ns() // 1_000_000


def say(line):
    print(line, flush=True)


if ENGINE == "postgres":
    import psycopg2
    import psycopg2.extensions as ext

    URI = os.environ["DATABASE_URI"]
    HOST = urlsplit(URI).hostname

    def wait(conn, deadline):
        # An asynchronous connection, polled: a hung server (SIGSTOP) answers nothing, and
        # nothing but a deadline of our own ends the wait (libpq has none for a statement).
        while True:
            state = conn.poll()
            if state == ext.POLL_OK:
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimedOut()
            fd = conn.fileno()
            select.select([fd] if state == ext.POLL_READ else [], [fd] if state == ext.POLL_WRITE else [], [], left)

    def run(sql, addr):
        started = time.monotonic()
        try:
            conn = psycopg2.connect(URI, hostaddr=addr, async_=1)
        except psycopg2.Error as err:
            raise NoSession(str(err)) from err
        try:
            # Opening the session: CONNECT_TIMEOUT, as psql's connect_timeout did.
            try:
                wait(conn, started + CONNECT_TIMEOUT)
            except psycopg2.OperationalError as err:
                raise NoSession(str(err)) from err
            deadline = started + TIMEOUT
            # An asynchronous connection commits each statement on its own. The cursor must
            # outlive the wait: polling a connection whose cursor is gone fails.
            cursor = conn.cursor()
            cursor.execute(sql)
            wait(conn, deadline)
        finally:
            conn.close()

else:
    import pymysql

    HOST = os.environ["DB_HOST"]

    def run(sql, addr):
        # read_timeout bounds each wait for the server: a hung one raises "timed out".
        try:
            conn = pymysql.connect(
                host=addr,
                port=int(os.environ["DB_PORT"]),
                user=os.environ["DB_USER"],
                password=os.environ["MYSQL_PWD"],
                database=os.environ["DB_NAME"],
                connect_timeout=CONNECT_TIMEOUT,
                read_timeout=TIMEOUT,
                write_timeout=TIMEOUT,
                autocommit=True,
            )
        except pymysql.err.OperationalError as err:
            if "timed out" in str(err):
                raise TimedOut() from err
            raise NoSession(describe(err)) from err
        try:
            conn.cursor().execute(sql)
        except pymysql.err.OperationalError as err:
            if "timed out" in str(err):
                raise TimedOut() from err
            raise
        finally:
            try:
                conn.close()
            except Exception:
                pass  # already closed by the error


def describe(err):
    if ENGINE == "mariadb" and len(err.args) == 2:
        return f"ERROR {err.args[0]}: {err.args[1]}"
    return str(err)


last = None


def failed(id, code, message):
    global last
    message = " ".join(message.split())[:200]
    if message != last:
        say(f"fail {id} {now()} {code} {message}".rstrip())
        last = message
    else:
        say(f"fail {id} {now()} {code}")
    # A refused connection fails at once: this keeps the retries from flooding the log.
    time.sleep(0.05)


def attempt(id, sql, addr):
    try:
        run(sql, addr)
        return True
    except TimedOut:
        failed(id, 124, "")
    except NoSession as err:
        failed(id, 2, str(err).splitlines()[0] if str(err) else "")
    except Exception as err:
        text = describe(err)
        failed(id, 1, text.splitlines()[0] if text else type(err).__name__)
    return False


say(f"start {now()}")
# The Service's name resolved once: its cluster IP is fixed for the Service's life. A lookup per
# write is six queries to the cluster DNS (three search domains, A and AAAA) on a loaded node, and
# a lost one costs the resolver's 5 s retry: a stall the scenarios would count as the database's.
while True:
    try:
        addr = socket.getaddrinfo(HOST, None, socket.AF_INET)[0][4][0]
        break
    except OSError as err:
        failed(0, 2, f"cannot resolve {HOST}: {err}")
        time.sleep(0.5)

while not attempt(0, CREATE, addr):
    pass
say(f"table {now()}")
id = 1
while True:
    if attempt(id, INSERT.format(id=id), addr):
        say(f"ack {id} {now()}")
        id += 1
        if PAUSE:
            time.sleep(PAUSE)
