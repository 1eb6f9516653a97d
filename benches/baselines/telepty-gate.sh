#!/usr/bin/env bash
# BASELINE (c) -- NOT promptgate. A telepty-style readiness gate: poll the
# screen every 150 ms; once the agent's prompt symbol has been on screen, on an
# unchanged line, for 200 ms, send the text, and a separate Enter 300 ms later.
# No busy check, no dialog check. After 8 s without a stable prompt it stops
# waiting and sends anyway. The text goes as in the fixed-sleep sender.
# Usage: telepty-gate.sh SOCKET PANE BODY_FILE SYMBOL
sock=$1 pane=$2 sym=$4
msg=$(cat "$3")
clock() { local t=${EPOCHREALTIME//[.,]/}; now=$((10#$t / 1000)); }
clock
deadline=$((now + 8000)) last="" since=0
while :; do
    line=$(tmux -L "$sock" capture-pane -p -t "$pane" | grep -E "^ *$sym" | tail -n 1)
    clock
    if [ -z "$line" ]; then
        last=""
    elif [ "$line" != "$last" ]; then
        last=$line since=$now
    elif [ $((now - since)) -ge 200 ]; then
        break
    fi
    [ "$now" -ge "$deadline" ] && break
    sleep 0.15
done
t=${EPOCHREALTIME//[.,]/}
echo "type_at_us=$t"
tmux -L "$sock" send-keys -t "$pane" "$msg"
sleep 0.3
tmux -L "$sock" send-keys -t "$pane" Enter
t=${EPOCHREALTIME//[.,]/}
echo "submit_at_us=$t"
