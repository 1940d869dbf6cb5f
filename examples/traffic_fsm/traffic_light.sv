// Traffic light controller: a 3-state FSM with a cycle timer and a
// pedestrian request that shortens the green phase.
module traffic_light (
    input  logic       clk,
    input  logic       rst_n,
    input  logic       ped_req,
    output logic [1:0] light   // 0 = red, 1 = green, 2 = yellow
);
  typedef enum logic [1:0] {RED = 2'd0, GREEN = 2'd1, YELLOW = 2'd2} state_t;
  state_t state;
  logic [3:0] timer;

  always_ff @(posedge clk or negedge rst_n) begin
    if (!rst_n) begin
      state <= RED;
      timer <= 4'd0;
    end else begin
      case (state)
        RED: begin
          if (timer == 4'd4) begin
            state <= GREEN;
            timer <= 4'd0;
          end else timer <= timer + 4'd1;
        end
        GREEN: begin
          if (timer == 4'd9 || (ped_req && timer >= 4'd2)) begin
            state <= YELLOW;
            timer <= 4'd0;
          end else timer <= timer + 4'd1;
        end
        YELLOW: begin
          if (timer == 4'd1) begin
            state <= RED;
            timer <= 4'd0;
          end else timer <= timer + 4'd1;
        end
        default: state <= RED;
      endcase
    end
  end

  assign light = state;
endmodule
