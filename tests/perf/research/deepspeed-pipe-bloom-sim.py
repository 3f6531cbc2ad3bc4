# Simulate DeepSpeed 0.6-era TrainSchedule (pipe/schedule.py) with blocking, rendezvous p2p.
import sys
def steps(m,p,s):
    def valid_mb(i): return 0<=i<m
    def valid_st(x): return 0<=x<p
    def step_to_mb(step):
        ev=lambda x:x%2==0
        if ev(step) and ev(s): return (step//2 - s//2, True)
        if (not ev(step)) and (not ev(s)): return ((step-1)//2 - s//2, True)
        if ev(step) and not ev(s): return (step//2 - p + (s+1)//2, False)
        return (((step-1)//2) - p + 1 + s//2, False)
    prev=-1; out=[]
    for step in range(2*(m+p-1)):
        mb,fwd=step_to_mb(step); cmds=[]
        if fwd:
            if valid_mb(mb) and valid_st(s-1): cmds.append(('recv_act',mb))
            if valid_mb(prev) and valid_st(s-1): cmds.append(('send_grad',prev))
        else:
            if valid_mb(prev) and valid_st(s+1): cmds.append(('send_act',prev))
            if valid_mb(mb) and valid_st(s+1): cmds.append(('recv_grad',mb))
        if valid_mb(mb): cmds.append(('F' if fwd else 'B',mb))
        prev=mb; out+=cmds
    return out
def run(m,p,F,B,tx):
    prog=[steps(m,p,s) for s in range(p)]
    pc=[0]*p; t=[0.0]*p
    # pending comm arrivals: key (kind,src,dst,mb) -> time
    pend={}
    partner={'send_act':('recv_act',1),'recv_act':('send_act',-1),'send_grad':('recv_grad',-1),'recv_grad':('send_grad',1)}
    done=False
    while True:
        progress=False
        for s in range(p):
            while pc[s]<len(prog[s]):
                op,mb=prog[s][pc[s]]
                if op in ('F','B'):
                    t[s]+= F[s] if op=='F' else B[s]; pc[s]+=1; progress=True; continue
                pop,d=partner[op]; o=s+d
                # canonical key: (link, direction-kind, mb)
                kind='act' if 'act' in op else 'grad'
                key=(kind,min(s,o),mb)
                if key in pend and pend[key][0]!=s:
                    other,ta=pend.pop(key); end=max(ta,t[s])+tx
                    t[s]=end; t[other]=end; pc[s]+=1; pc[other]+=1; progress=True; continue
                elif key not in pend:
                    pend[key]=(s,t[s])
                break
        if all(pc[s]==len(prog[s]) for s in range(p)): break
        if not progress: raise SystemExit('deadlock')
    return max(t), t
m,p=128,12
f_mid=135.44+10.2; b_mid=315.42+135.44+2.27+9.79
f0=113.0+8.16+0.82; b0=273.41+112.86+1.96+8.16
f11=149.63+8.57+0.82; b11=336.2+112.86+1.55+8.16
def costs(extra_b=0.0, extra_f=0.0):
    F=[f0]+[f_mid]*10+[f11]; B=[b0]+[b_mid]*10+[b11]
    F=[x+extra_f for x in F]; B=[x+extra_b for x in B]
    return F,B
for label,tx,eb in [('no p2p',0,0),('p2p 5.24ms blocking',5.24+0.05,0),('p2p 5.24 + unoverlapped bwd TP AR',5.29,10.2-2.27)]:
    F,B=costs(eb)
    T,_=run(m,p,F,B,tx)
    print(f'{label:40s} T={T/1000:.3f} s')
# ideal 1F1B formula for comparison
F,B=costs()
print('formula (m+p-1)*(Fmid+Bmid) =', (m+p-1)*(f_mid+b_mid)/1000)
print('formula m*(Fmid+Bmid)+sum_{other}... ~', (m*(f_mid+b_mid) + sum(F[i]+B[i] for i in range(p) if i!=1))/1000)
print('--- cumulative engine items (bottleneck = stage 11) ---')
def costs2(bwd_ar=True, ln=True, data=True, ag=True, drop=False):
    F=[f0]+[f_mid]*10+[f11]; B=[b0]+[b_mid]*10+[b11]
    L=[5]+[6]*10+[5]
    for i in range(p):
        if bwd_ar: B[i]+= (10.2-2.27) if 0<i<11 else (8.16-1.96 if i==0 else 8.57-1.55)
        if ln:  # 2 LN/layer x 2 AR x 30us in fwd and in recompute
            F[i]+= L[i]*2*2*0.03; B[i]+= L[i]*2*2*0.03
        if data and i in (0,11): F[i]+=1.0
        if ag and i<11: B[i]+=0.7   # part_output.full() all-gather before backward on sending stages
        if drop: F[i]+=L[i]*0.75; B[i]+=L[i]*1.5
    return F,B
T0,_=run(m,p,*costs(),0)
prev=T0
for lab,kw,tx in [('+blocking p2p',dict(bwd_ar=False,ln=False,data=False,ag=False),5.29),
                 ('+bwd TP AR exposed',dict(bwd_ar=True,ln=False,data=False,ag=False),5.29),
                 ('+LN tp-sync ARs',dict(bwd_ar=True,ln=True,data=False,ag=False),5.29),
                 ('+batch load/broadcast',dict(bwd_ar=True,ln=True,data=True,ag=False),5.29),
                 ('+output re-gather AG',dict(bwd_ar=True,ln=True,data=True,ag=True),5.29),
                 ('+dropout 0.1 (if on)',dict(bwd_ar=True,ln=True,data=True,ag=True,drop=True),5.29)]:
    T,_=run(m,p,*costs2(**kw),tx); print(f'{lab:28s} T={T/1000:7.3f}  delta={ (T-prev)/1000:+.3f}  cum={(T-T0)/1000:+.3f}'); prev=T
