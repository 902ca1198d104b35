"""The C++ side of the packet simulator, compiled into ns-3 through cppyy.

Everything that runs once per packet and is not the P4 program lives here, so
that a packet costs one call into Python (the switch's engine) and no Python
objects beyond its bytes:

* a frame that reaches a switch's device is handed to Python's ``on_frame(dev,
  data, now_ns)``, which returns the frames to send as ``[(dev, data), ...]``;
  the shim puts each on its device's queue (drop-tail, or ECN-marking above a
  threshold) and counts what each device sent and dropped;
* a switch port facing a host adds the Ethernet header the host's NIC would
  have sent (ns-3's hosts speak IPv4 over point-to-point links) and takes it
  off again towards the host;
* a link cut is a receive error model on both of its devices (frames in flight
  and queued are lost, as on a pulled cable);
* Python's timers (control plane, port-status packets, samples) are ns-3
  events calling ``on_timer(token)``;
* hosts' TCP: each flow's sink counts bytes and notes completion; its sender's
  retransmissions and timeouts (the socket entering the loss state) are counted.

The GIL is held throughout: ``ns.Simulator.Run()`` is called from Python and
cppyy does not release it, so the callbacks use the C API directly.
"""

from __future__ import annotations

import functools
from typing import Any

CXX = r"""
#include <Python.h>
#include <vector>
#include <string>
#include <map>
#include <unordered_map>
namespace psim {
using namespace ns3;

PyObject* g_on_frame = nullptr;
PyObject* g_on_timer = nullptr;
PyObject* g_error = nullptr;        // first Python exception raised in a callback
std::vector<Ptr<PointToPointNetDevice>> g_dev;
std::unordered_map<NetDevice*, uint32_t> g_index;
std::vector<std::string> g_rx_prefix;   // switch port facing a host: the host's Ethernet header
std::vector<uint8_t> g_strip;           // switch port facing a host: drop the Ethernet header
std::vector<uint32_t> g_ecn_bytes;      // 0: drop-tail; else mark CE at this queue depth
std::vector<uint64_t> g_tx_bytes, g_tx_frames, g_rx_bytes, g_drops, g_marks;
std::vector<Ptr<RateErrorModel>> g_cut;
std::vector<uint8_t> g_buf;

// flows (hosts' TCP)
std::map<uint32_t, double> g_done;
std::map<uint32_t, uint64_t> g_got, g_want;
std::map<uint32_t, uint32_t> g_retx, g_timeouts;

void Fail(const char* where) {
  if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, where);
  if (!g_error) { PyObject *t, *v, *tb; PyErr_Fetch(&t, &v, &tb); PyErr_NormalizeException(&t, &v, &tb);
                  g_error = v ? v : t; Py_XINCREF(g_error); Py_XDECREF(t); Py_XDECREF(v); Py_XDECREF(tb); }
  PyErr_Clear();
  Simulator::Stop();
}

bool Error() { return g_error != nullptr; }
PyObject* TakeError() { PyObject* e = g_error; g_error = nullptr; return e ? e : Py_None; }

void SetCallbacks(PyObject* on_frame, PyObject* on_timer) {
  Py_XINCREF(on_frame); Py_XINCREF(on_timer);
  g_on_frame = on_frame; g_on_timer = on_timer;
}

static void MarkCe(uint8_t* d, uint32_t n) {
  uint32_t ip = 14;
  if (n < 14) return;
  uint16_t et = (d[12] << 8) | d[13];
  if (et == 0x88B6) { if (n < 14 + 20 + 20 || d[15] != 0x05) return; et = (d[14 + 18] << 8) | d[14 + 19]; ip = 34; }
  if (et != 0x0800 || n < ip + 20) return;
  uint8_t tos = d[ip + 1];
  if ((tos & 3) == 0 || (tos & 3) == 3) return;   // not ECN-capable, or marked already
  uint16_t old_word = (d[ip] << 8) | tos;
  d[ip + 1] = tos | 3;
  uint16_t new_word = (d[ip] << 8) | d[ip + 1];
  uint32_t sum = (~((d[ip + 10] << 8) | d[ip + 11]) & 0xffff) + (~old_word & 0xffff) + new_word;  // RFC 1624
  sum = (sum & 0xffff) + (sum >> 16); sum = (sum & 0xffff) + (sum >> 16);
  uint16_t csum = ~sum & 0xffff;
  d[ip + 10] = csum >> 8; d[ip + 11] = csum & 0xff;
}

bool SendRaw(uint32_t dev, const uint8_t* data, uint32_t n) {
  if (dev >= g_dev.size()) return false;
  uint32_t off = g_strip[dev] ? 14 : 0;
  if (n < off) return false;
  if (g_ecn_bytes[dev]) {
    Ptr<Queue<Packet>> q = g_dev[dev]->GetQueue();
    if (q->GetNBytes() >= g_ecn_bytes[dev]) {
      g_buf.assign(data, data + n);
      MarkCe(g_buf.data(), n);
      data = g_buf.data();
      g_marks[dev]++;
    }
  }
  Ptr<Packet> p = Create<Packet>(data + off, n - off);
  if (!g_dev[dev]->Send(p, g_dev[dev]->GetBroadcast(), 0x0800)) { g_drops[dev]++; return false; }
  g_tx_bytes[dev] += n; g_tx_frames[dev]++;
  return true;
}

static void Deliver(PyObject* outs) {
  if (outs == Py_None) return;
  PyObject* seq = PySequence_Fast(outs, "on_frame must return a list");
  if (!seq) { Fail("on_frame result"); return; }
  Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
  PyObject** items = PySequence_Fast_ITEMS(seq);
  for (Py_ssize_t i = 0; i < k; i++) {
    PyObject* o = items[i];
    if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) != 2) { Py_DECREF(seq); PyErr_SetString(PyExc_TypeError, "on_frame: expected (dev, bytes)"); Fail("on_frame"); return; }
    long dev = PyLong_AsLong(PyTuple_GET_ITEM(o, 0));
    char* b; Py_ssize_t n;
    if (PyBytes_AsStringAndSize(PyTuple_GET_ITEM(o, 1), &b, &n) < 0) { Py_DECREF(seq); Fail("on_frame bytes"); return; }
    SendRaw((uint32_t)dev, (const uint8_t*)b, (uint32_t)n);
  }
  Py_DECREF(seq);
}

bool Rx(Ptr<NetDevice> d, Ptr<const Packet> p, uint16_t proto, const Address& from) {
  if (g_error) return true;
  uint32_t dev = g_index[PeekPointer(d)];
  const std::string& pre = g_rx_prefix[dev];
  uint32_t n = p->GetSize();
  g_rx_bytes[dev] += n;
  PyObject* bytes = PyBytes_FromStringAndSize(nullptr, pre.size() + n);
  if (!bytes) { Fail("rx alloc"); return true; }
  char* buf = PyBytes_AS_STRING(bytes);
  memcpy(buf, pre.data(), pre.size());
  p->CopyData((uint8_t*)buf + pre.size(), n);
  PyObject* a = PyLong_FromUnsignedLong(dev);
  PyObject* t = PyLong_FromLongLong(Simulator::Now().GetNanoSeconds());
  PyObject* r = PyObject_CallFunctionObjArgs(g_on_frame, a, bytes, t, NULL);
  Py_DECREF(a); Py_DECREF(t); Py_DECREF(bytes);
  if (!r) { Fail("on_frame"); return true; }
  Deliver(r);
  Py_DECREF(r);
  return true;
}

static void OnTimer(long token) {
  if (g_error) return;
  PyObject* a = PyLong_FromLong(token);
  PyObject* t = PyLong_FromLongLong(Simulator::Now().GetNanoSeconds());
  PyObject* r = PyObject_CallFunctionObjArgs(g_on_timer, a, t, NULL);
  Py_DECREF(a); Py_DECREF(t);
  if (!r) { Fail("on_timer"); return; }
  Deliver(r);
  Py_DECREF(r);
}

void At(int64_t t_ns, long token) {
  Time when = NanoSeconds(t_ns);
  Time delay = when > Simulator::Now() ? when - Simulator::Now() : Time(0);
  Simulator::Schedule(delay, &OnTimer, token);
}

uint32_t AddSwitchPort(Ptr<NetDevice> d, const std::string& rx_prefix, bool strip, uint32_t ecn_bytes) {
  uint32_t id = g_dev.size();
  Ptr<PointToPointNetDevice> pd = DynamicCast<PointToPointNetDevice>(d);
  g_dev.push_back(pd);
  g_index[PeekPointer(d)] = id;
  g_rx_prefix.push_back(rx_prefix);
  g_strip.push_back(strip ? 1 : 0);
  g_ecn_bytes.push_back(ecn_bytes);
  g_tx_bytes.push_back(0); g_tx_frames.push_back(0); g_rx_bytes.push_back(0); g_drops.push_back(0); g_marks.push_back(0);
  Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
  em->SetAttribute("ErrorRate", DoubleValue(1.0));
  em->SetAttribute("ErrorUnit", StringValue("ERROR_UNIT_PACKET"));
  em->Disable();
  g_cut.push_back(em);
  pd->SetReceiveErrorModel(em);
  d->SetReceiveCallback(MakeCallback(&Rx));
  return id;
}

// A device that is not a switch's (a host NIC): only its cut state is kept here.
Ptr<RateErrorModel> CutModel(Ptr<NetDevice> d) {
  Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
  em->SetAttribute("ErrorRate", DoubleValue(1.0));
  em->SetAttribute("ErrorUnit", StringValue("ERROR_UNIT_PACKET"));
  em->Disable();
  DynamicCast<PointToPointNetDevice>(d)->SetReceiveErrorModel(em);
  return em;
}

static void SetCutNow(Ptr<RateErrorModel> a, Ptr<RateErrorModel> b, bool down) {
  if (down) { a->Enable(); b->Enable(); } else { a->Disable(); b->Disable(); }
}

void ScheduleCut(int64_t t_ns, Ptr<RateErrorModel> a, Ptr<RateErrorModel> b, bool down) {
  Simulator::Schedule(NanoSeconds(t_ns) - Simulator::Now(), &SetCutNow, a, b, down);
}

Ptr<RateErrorModel> DevCut(uint32_t dev) { return g_cut[dev]; }

uint64_t TxBytes(uint32_t dev) { return g_tx_bytes[dev]; }
uint64_t TxFrames(uint32_t dev) { return g_tx_frames[dev]; }
uint64_t RxBytes(uint32_t dev) { return g_rx_bytes[dev]; }
uint64_t Drops(uint32_t dev) { return g_drops[dev]; }
uint64_t Marks(uint32_t dev) { return g_marks[dev]; }
uint32_t QueueBytes(uint32_t dev) { return g_dev[dev]->GetQueue()->GetNBytes(); }
uint64_t QueueDrops(uint32_t dev) { return g_dev[dev]->GetQueue()->GetTotalDroppedPackets(); }

// ---- flows
static void OnSinkRx(uint32_t id, Ptr<const Packet> p, const Address& a) {
  g_got[id] += p->GetSize();
  if (g_got[id] >= g_want[id] && g_done.find(id) == g_done.end())
    g_done[id] = Simulator::Now().GetSeconds();
}
static void OnRetx(uint32_t id, Ptr<const Packet> p, const TcpHeader& h, const Address& a, const Address& b,
                   Ptr<const TcpSocketBase> s) { g_retx[id]++; }
static void OnCongState(uint32_t id, TcpSocketState::TcpCongState_t from, TcpSocketState::TcpCongState_t to) {
  if (to == TcpSocketState::CA_LOSS) g_timeouts[id]++;
}
static void HookSocket(Ptr<BulkSendApplication> app, uint32_t id) {
  Ptr<Socket> s = app->GetSocket();
  if (s) s->TraceConnectWithoutContext("CongState", MakeBoundCallback(&OnCongState, id));
}
void HookFlow(Ptr<Application> sink, Ptr<Application> sender, uint32_t id, uint64_t bytes, double start) {
  g_want[id] = bytes; g_got[id] = 0; g_retx[id] = 0; g_timeouts[id] = 0;
  sink->TraceConnectWithoutContext("Rx", MakeBoundCallback(&OnSinkRx, id));
  Ptr<BulkSendApplication> b = DynamicCast<BulkSendApplication>(sender);
  b->TraceConnectWithoutContext("TcpRetransmission", MakeBoundCallback(&OnRetx, id));
  Simulator::Schedule(Seconds(start) + NanoSeconds(1), &HookSocket, b, id);
}
double Done(uint32_t id) { return g_done.count(id) ? g_done[id] : -1.0; }
uint64_t Got(uint32_t id) { return g_got[id]; }
uint32_t Retx(uint32_t id) { return g_retx[id]; }
uint32_t Timeouts(uint32_t id) { return g_timeouts[id]; }
bool AllDone() { return g_done.size() == g_want.size(); }

static void Watch(double period) {
  if (AllDone() || g_error) { Simulator::Stop(); return; }
  Simulator::Schedule(Seconds(period), &Watch, period);
}
void StopWhenDone(double period) { Simulator::Schedule(Seconds(period), &Watch, period); }
}
"""


@functools.cache
def load() -> tuple[Any, Any]:
    """(ns, psim): ns-3's bindings and the shim, compiled once per process."""
    import cppyy
    from ns import ns  # compiles the bindings on import (seconds)

    cppyy.cppdef(CXX)
    return ns, cppyy.gbl.psim
