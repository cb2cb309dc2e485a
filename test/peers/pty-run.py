# Run a command on a pseudo-terminal, answer its prompts, and print everything the terminal showed.
# usage: pty-run.py PROMPT ANSWER [PROMPT ANSWER ...] -- COMMAND ARGS...
# Each ANSWER is typed (then Enter) only once PROMPT has appeared: nothing is typed ahead of the
# program, so an echo could only come from the program's own terminal settings.
import os, pty, select, sys

sep = sys.argv.index('--')
pairs = sys.argv[1:sep]
cmd = sys.argv[sep + 1:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(cmd[0], cmd)
seen = b''
todo = [(pairs[i].encode(), pairs[i + 1].encode()) for i in range(0, len(pairs), 2)]
while True:
    r, _, _ = select.select([fd], [], [], 20)
    if not r:
        sys.stderr.write('timeout waiting for the program\n')
        os.kill(pid, 9)
        sys.exit(3)
    try:
        data = os.read(fd, 4096)
    except OSError:
        break
    if not data:
        break
    seen += data
    while todo and todo[0][0] in seen:
        prompt, answer = todo.pop(0)
        seen = seen.replace(prompt, b'<' + prompt.strip() + b'>', 1)
        os.write(fd, answer + b'\r')
_, status = os.waitpid(pid, 0)
sys.stdout.write(seen.decode('utf8', 'replace'))
sys.exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 4)
