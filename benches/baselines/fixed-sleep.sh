#!/usr/bin/env bash
# BASELINE (b) -- NOT promptgate. The fixed-sleep sender that many
# orchestration scripts use today:
#     tmux send-keys -t P "$msg"; sleep 0.5; tmux send-keys -t P Enter
# Usage: fixed-sleep.sh SOCKET PANE BODY_FILE
sock=$1 pane=$2
msg=$(cat "$3")
t=${EPOCHREALTIME//[.,]/}
echo "type_at_us=$t"
tmux -L "$sock" send-keys -t "$pane" "$msg"
sleep 0.5
tmux -L "$sock" send-keys -t "$pane" Enter
t=${EPOCHREALTIME//[.,]/}
echo "submit_at_us=$t"
