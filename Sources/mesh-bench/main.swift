// mesh-bench: benchmark programs that print figures. Each subcommand lives in its own file.
import CSQLite
import Foundation

// Each figure line goes out as it is measured, also into a pipe or a file (`| tee`, a CI log):
// a run takes minutes, and a block-buffered stdout showed nothing until it ended.
meshd_line_buffer_stdout()

let arguments = Array(CommandLine.arguments.dropFirst())
let usage = """
usage: mesh-bench <subcommand> [options]
  engine   submit+receive rate between two engines, memory after 1 000 000 events
  crypto   datagram seal/open, Noise handshake and CPace cost next to raw libsodium
  store    durable store commit rates (single, group commit, inbox) and database size
  delivery two meshd on loopback, app → A → B → app: realtime latency and throughput, reliable
           throughput durable at both ends, raw loopback UDP for scale, daemon RSS
  compare  realtime latency, realtime and reliable throughput of this build's meshd against another
           meshd binary, both pairs running at once and messages (bursts) alternating between them
           (A/B on a machine whose speed drifts), with this ÷ other ratios
  relay-client [ROUNDS]
           the relay's MQTT client through a Mosquitto started on loopback: round-trip latency at
           QoS 0 and 1, CPU per message, CPU of an idle connection (needs /usr/sbin/mosquitto)
  relay    two meshd whose channel runs through a Mosquitto on loopback (no direct path) next to
           raw MQTT clients through the same broker in the same run: paced realtime latency, reliable
           throughput against QoS 1, CPU per message, relayed ÷ raw
  compare-mqtt
           two meshd paired on loopback against two bridged Mosquitto brokers, the same workloads
           from one process: paced realtime latency, realtime throughput, reliable items and latest
           state across a receiver's kill -9, CPU per message, a raw UDP floor (`make bench-compare`)
"""

switch arguments.first {
case "engine":
    EngineBenchmark.run(arguments: Array(arguments.dropFirst()))
case "crypto":
    CryptoBenchmark.run(arguments: Array(arguments.dropFirst()))
case "store":
    StoreBenchmark.run(arguments: Array(arguments.dropFirst()))
case "delivery":
    DeliveryBenchmark.run(arguments: Array(arguments.dropFirst()))
case "relay-client":
    RelayClientBenchmark.run(arguments: Array(arguments.dropFirst()))
case "relay":
    RelayComparison.run(arguments: Array(arguments.dropFirst()))
case "compare-mqtt":
    MQTTBridgeComparison.run(arguments: Array(arguments.dropFirst()))
case "compare":
    LatencyComparison.run(arguments: Array(arguments.dropFirst()))
case "-h", "--help", "help":
    print(usage)
default:
    FileHandle.standardError.write(Data((usage + "\n").utf8))
    exit(2)
}
